-- @include emitEvent
-- @include pushReady
-- promoteDelayed(keys, prefix, now, maxEvents): move every delayed job that is due to ready.
-- keys: { delayed, events, and those of pushReady }. At most 1000 a call keeps one script short;
-- the rest follow on the next pickup, which comes at once because the marker is set.
-- now is a number here (it is compared); maxEvents is the ARGV string.
-- Returns the score (ms timestamp) of the next job still delayed, or 0 when there is none.
-- Every pickup runs this, so the common case (nothing delayed, or nothing due yet) costs one
-- ZRANGE: the earliest delayed job answers both "is anything due?" and "when is the next one?".
local function promoteDelayed(keys, prefix, now, maxEvents)
  local earliest = rcall("ZRANGE", keys.delayed, "0", "0", "WITHSCORES")
  local earliestDue = tonumber(earliest[2])
  if not earliestDue then return 0 end
  if earliestDue > now then return earliestDue end
  local due = rcall("ZRANGEBYSCORE", keys.delayed, 0, now, "LIMIT", 0, 1000)
  rcall("ZREM", keys.delayed, unpack(due))
  for _, jobId in ipairs(due) do
    local priority = tonumber(rcall("HGET", prefix .. jobId, "priority")) or 0
    pushReady(keys, jobId, priority, false)
    emitEvent(keys.events, maxEvents, "waiting", jobId, "prev", "delayed")
  end
  local nextDelayed = rcall("ZRANGE", keys.delayed, "0", "0", "WITHSCORES")
  return tonumber(nextDelayed[2]) or 0
end
