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
-- @include readNotice

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
