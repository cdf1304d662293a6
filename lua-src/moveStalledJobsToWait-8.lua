--[[
  moveStalledJobsToWait-8 · the stalled sweep: jobs in active whose lock lapsed go back to wait,
  or to failed once they stalled more than maxStalledCount times.

  KEYS[1] stalled  [2] wait  [3] active  [4] failed  [5] stalled-check  [6] meta  [7] paused
      [8] events
  ARGV[1] maxStalledCount  [2] job-key prefix "P:{Q}:"  [3] now (ms)  [4] stalledInterval ms
      [5] events max length (optional, default 10000)
  Returns { movedToWait = {jobId, stc, ...}, movedToFailed = {jobId, stc, ...} } as two flat arrays.
  Runs at most once per stalledInterval across all workers (the stalled-check guard). A job stalls
  only when two sweeps in a row find it active with no heartbeat between them and no lock at the
  second. An id in active with no job hash is dropped from active (there is nothing to retry).
  The runtime that ran it adds the wake-up marker when jobs went back to wait.
]]
local rcall = redis.call
-- @include emitEvent

if rcall("EXISTS", KEYS[5]) == 1 then return { {}, {} } end
rcall("SET", KEYS[5], ARGV[3], "PX", ARGV[4])

-- now and maxEvents are written as the ARGV strings they came as (docs/protocol.md); stc is
-- HINCRBY's integer, returned as one, and formatted once for its events.
local maxStalledCount, prefix, now = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local maxEvents = tonumber(ARGV[5]) and ARGV[5] or "10000"
local paused = rcall("HEXISTS", KEYS[6], "paused") == 1
local toWait, toFailed = {}, {}

for _, jobId in ipairs(rcall("SMEMBERS", KEYS[1])) do
  local jobKey = prefix .. jobId
  if rcall("EXISTS", jobKey .. ":lock") == 0 and rcall("LREM", KEYS[3], "1", jobId) > 0 then
    if rcall("EXISTS", jobKey) == 0 then
      emitEvent(KEYS[8], maxEvents, "removed", jobId, "reason", "job hash missing in active")
    else
      local stc = rcall("HINCRBY", jobKey, "stc", "1")
      if stc > maxStalledCount then
        local reason = "job stalled more than allowable limit"
        rcall("HINCRBY", jobKey, "atm", "1")
        rcall("HSET", jobKey, "finishedOn", now, "failedReason", reason)
        rcall("ZADD", KEYS[4], now, jobId)
        emitEvent(KEYS[8], maxEvents, "stalled", jobId, "stc", tostring(stc))
        emitEvent(KEYS[8], maxEvents, "failed", jobId, "failedReason", reason)
        toFailed[#toFailed + 1] = jobId
        toFailed[#toFailed + 1] = stc
      else
        rcall("LPUSH", paused and KEYS[7] or KEYS[2], jobId)
        emitEvent(KEYS[8], maxEvents, "stalled", jobId, "stc", tostring(stc))
        toWait[#toWait + 1] = jobId
        toWait[#toWait + 1] = stc
      end
    end
  end
end

rcall("DEL", KEYS[1])
local active = rcall("LRANGE", KEYS[3], 0, -1)
for i = 1, #active, 5000 do
  rcall("SADD", KEYS[1], unpack(active, i, math.min(i + 4999, #active)))
end
return { toWait, toFailed }
