-- Generated from lua-src/ackNotices-2.lua by `npm run build:lua`: edit the source, not this file.
--[[
  ackNotices-2 · notices delivered to their parents (settleChildren-12 answered) go: each only
  if it still says what was delivered. A child retried after a failure may have finished again
  meanwhile and written a newer notice under the same id, which must stay for its own delivery.
  Two kinds of entry, five fields each:
  - a notice the runtime built itself (a worker's finish): the stored notice is decoded and
    compared field by field (not as text: runtimes' JSON encoders differ, e.g. cjson writes "/" as
    "\/"). A stored notice that is none for readNotice (not JSON to cjson, not an array, fields
    missing or of the wrong kind) goes whatever the entry says: a finish's notice, written by
    cjson, is always one, so such data is no newer notice, and it can never be delivered.
  - data the runtime read from notice-data (a notice it delivered, or data it could not read and
    reported), parentKey "": it goes only while HGET answers it byte for byte. No decoder is
    involved, so parsers that disagree (cjson takes NaN, Infinity and hex numbers, which
    JSON.parse refuses; JSON.parse takes a lone \ud800 escape, which cjson refuses) cannot keep
    data for ever that one side reads as a notice and the other not; a newer notice differs from
    what was read, and stays.

  KEYS[1] notices   [2] notice-data
  ARGV five fields an entry: child id, then either parentKey, outcome, value, policy (a notice
      built by the runtime; parentKey never "") or "", "", the data as read, "" (data read)
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
-- runtime's parseNotice): a notice that is none cannot be delivered, and is deleted. Their JSON
-- parsers still differ at the edges (cjson takes NaN, Infinity, hex; JSON.parse a lone \ud800
-- escape), so what a runtime read is deleted by its bytes (ackNotices-2), not by this rule.
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
  local childId = ARGV[i]
  local stored = rcall("HGET", KEYS[2], childId)
  local goes = false
  if not stored then
    rcall("ZREM", KEYS[1], childId) -- its data went with an earlier ack
  elseif ARGV[i + 1] == "" then
    goes = stored == ARGV[i + 3]
  else
    local notice = readNotice(stored)
    goes = not notice or (notice.parentKey == ARGV[i + 1] and notice.outcome == ARGV[i + 2]
        and notice.value == ARGV[i + 3] and notice.policy == ARGV[i + 4])
  end
  if goes then
    rcall("HDEL", KEYS[2], childId)
    rcall("ZREM", KEYS[1], childId)
    gone = gone + 1
  end
end
return gone
