-- Generated from lua-src/ackNotices-2.lua by `npm run build:lua`: edit the source, not this file.
--[[
  ackNotices-2 · notices delivered to their parents (settleChildren-12 answered) go: each only
  if it still says what was delivered. A child retried after a failure may have finished again
  meanwhile and written a newer notice under the same id, which must stay for its own delivery.
  The stored notice is decoded and compared field by field (not as text: runtimes' JSON encoders
  differ, e.g. cjson writes "/" as "\/"). A stored notice that is none (readNotice: not JSON, not
  an array, fields missing or of the wrong kind) goes whatever ARGV says: it can never be
  delivered, and the runtime that read it has reported it.

  KEYS[1] notices   [2] notice-data
  ARGV five fields a notice: child id, parentKey, outcome, value, policy
  Returns how many went.
]]
local rcall = redis.call
-- [lua-src/includes/readNotice.lua]
-- readNotice(stored): a notice of notice-data (JSON [parentKey, outcome, value, policy]) as
-- { parentKey, outcome, value, policy }, or nil when it is none: not JSON (decoded under pcall, so
-- bad data never raises mid-script), not an array, a parentKey that is not a non-empty string, an
-- outcome other than "completed" and "failed", a value or policy that is neither a string nor
-- JSON null (another runtime's null reads as ""; a field left out is missing, not ""), or a policy
-- none of "", fail, ignore, remove, continue. The runtimes read notices by the same rule (the Node
-- runtime's parseNotice): a notice that is none cannot be delivered, and is deleted.
local NOTICE_POLICIES = { [""] = true, fail = true, ignore = true, remove = true, continue = true }
local function readNotice(stored)
  local ok, notice = pcall(cjson.decode, stored)
  if not ok or type(notice) ~= "table" then return nil end
  local parentKey, outcome, value, policy = notice[1], notice[2], notice[3], notice[4]
  if value == cjson.null then value = "" end
  if policy == cjson.null then policy = "" end
  if type(parentKey) ~= "string" or parentKey == "" or (outcome ~= "completed" and outcome ~= "failed")
      or type(value) ~= "string" or type(policy) ~= "string" or not NOTICE_POLICIES[policy] then
    return nil
  end
  return { parentKey = parentKey, outcome = outcome, value = value, policy = policy }
end

local gone = 0
for i = 1, #ARGV, 5 do
  local stored = rcall("HGET", KEYS[2], ARGV[i])
  if not stored then
    rcall("ZREM", KEYS[1], ARGV[i]) -- its data went with an earlier ack
  else
    local notice = readNotice(stored)
    if not notice or (notice.parentKey == ARGV[i + 1] and notice.outcome == ARGV[i + 2]
        and notice.value == ARGV[i + 3] and notice.policy == ARGV[i + 4]) then
      rcall("HDEL", KEYS[2], ARGV[i])
      rcall("ZREM", KEYS[1], ARGV[i])
      gone = gone + 1
    end
  end
end
return gone
