-- Generated from lua-src/ackNotices-2.lua by `npm run build:lua`: edit the source, not this file.
--[[
  ackNotices-2 · notices delivered to their parents (settleChildren-12 answered) go: each only
  if it still says what was delivered. A child retried after a failure may have finished again
  meanwhile and written a newer notice under the same id, which must stay for its own delivery.
  The stored notice is decoded and compared field by field (not as text: runtimes' JSON encoders
  differ, e.g. cjson writes "/" as "\/").

  KEYS[1] notices   [2] notice-data
  ARGV five fields a notice: child id, parentKey, outcome, value, policy
  Returns how many went.
]]
local rcall = redis.call
-- A field another runtime wrote as JSON null (cjson.null, a truthy value) or left out reads as "".
local function text(value)
  if value == nil or value == cjson.null then return "" end
  return value
end
local gone = 0
for i = 1, #ARGV, 5 do
  local stored = rcall("HGET", KEYS[2], ARGV[i])
  if not stored then
    rcall("ZREM", KEYS[1], ARGV[i]) -- its data went with an earlier ack
  else
    local ok, notice = pcall(cjson.decode, stored)
    if not ok or type(notice) ~= "table" or (text(notice[1]) == ARGV[i + 1] and text(notice[2]) == ARGV[i + 2]
        and text(notice[3]) == ARGV[i + 3] and text(notice[4]) == ARGV[i + 4]) then
      -- Unreadable data cannot be delivered either: it goes with the ack that read it.
      rcall("HDEL", KEYS[2], ARGV[i])
      rcall("ZREM", KEYS[1], ARGV[i])
      gone = gone + 1
    end
  end
end
return gone
