-- pickup(keys, prefix, token, lockDuration, now, maxEvents, limiterMax, limiterDuration)
-- The shared body of moveToActive-11 and of the fetch-next step of moveToFinished-14.
-- keys: { wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker }.
-- Promotes due delayed jobs, then (unless paused or rate limited) takes the next ready job into
-- active and acquires its lock: SET <job>:lock <token> PX lockDuration (the seed's acquire), and
-- counts the attempt in ats, the job's fencing number.
-- Returns { jobId or 0, job hash as a flat array, next delayed timestamp or 0, ms rate limited or 0 }.
local function pickup(keys, prefix, token, lockDuration, now, maxEvents, limiterMax, limiterDuration)
  local nextDelayed = promoteDelayed(keys, prefix, now, maxEvents)
  if rcall("HEXISTS", keys.meta, "paused") == 1 then return { 0, {}, nextDelayed, 0 } end
  if limiterMax > 0 then
    local used = tonumber(rcall("GET", keys.limiter)) or 0
    if used >= limiterMax then
      return { 0, {}, nextDelayed, math.max(rcall("PTTL", keys.limiter), 1) }
    end
  end
  -- A hash can be missing when a job was deleted behind the queue's back; such ids are dropped
  -- from active (with an event) instead of being handed to a worker as an empty job.
  for _ = 1, 100 do
    local jobId = rcall("RPOPLPUSH", keys.wait, keys.active)
    if not jobId then
      local best = rcall("ZPOPMIN", keys.prioritized)
      jobId = best[1]
      if not jobId then return { 0, {}, nextDelayed, 0 } end
      rcall("LPUSH", keys.active, jobId)
    end
    local jobKey = prefix .. jobId
    if rcall("EXISTS", jobKey) == 1 then
      rcall("SET", jobKey .. ":lock", token, "PX", lockDuration)
      rcall("SREM", keys.stalled, jobId)
      rcall("HINCRBY", jobKey, "ats", 1)
      rcall("HSET", jobKey, "processedOn", now)
      if limiterMax > 0 and rcall("INCR", keys.limiter) == 1 then
        rcall("PEXPIRE", keys.limiter, limiterDuration)
      end
      -- More ready work: pass the wake-up on so another blocked worker takes it.
      if rcall("LLEN", keys.wait) > 0 or rcall("ZCARD", keys.prioritized) > 0 then
        rcall("ZADD", keys.marker, 0, "0")
      end
      emitEvent(keys.events, maxEvents, "active", jobId)
      return { jobId, rcall("HGETALL", jobKey), nextDelayed, 0 }
    end
    rcall("LREM", keys.active, 1, jobId)
    emitEvent(keys.events, maxEvents, "removed", jobId, "reason", "job hash missing at pickup")
  end
  return { 0, {}, nextDelayed, 0 }
end
