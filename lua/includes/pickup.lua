-- pickup(keys, prefix, token, lockDuration, now, maxEvents, limiterMax, limiterDuration, passWakeUp)
-- The shared body of moveToActive-11 and of the fetch-next step of moveToFinished-14.
-- keys: { wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker }.
-- Promotes due delayed jobs, then (unless paused or rate limited) takes the next ready job into
-- active and acquires its lock: SET <job>:lock <token> PX lockDuration (the seed's acquire), and
-- counts the attempt in ats, the job's fencing number.
-- Returns { jobId or 0, job hash as a flat array, next delayed timestamp or 0, ms rate limited or 0 }.
local function pickup(keys, prefix, token, lockDuration, now, maxEvents, limiterMax, limiterDuration, passWakeUp)
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
    local hash = rcall("HGETALL", jobKey)
    if #hash > 0 then
      rcall("SET", jobKey .. ":lock", token, "PX", lockDuration)
      rcall("SREM", keys.stalled, jobId)
      local ats = 1
      for i = 1, #hash, 2 do
        if hash[i] == "ats" then ats = tonumber(hash[i + 1]) + 1 end
      end
      rcall("HSET", jobKey, "ats", ats, "processedOn", now)
      -- Later pairs win when the runtime reads the flat array, so the fresh values go last.
      hash[#hash + 1] = "ats"
      hash[#hash + 1] = tostring(ats)
      hash[#hash + 1] = "processedOn"
      hash[#hash + 1] = tostring(now)
      if limiterMax > 0 and rcall("INCR", keys.limiter) == 1 then
        rcall("PEXPIRE", keys.limiter, limiterDuration)
      end
      -- A worker woken by the marker passes the wake-up on while ready work remains, so one
      -- marker for a batch of adds still wakes every blocked worker in turn. Fetch-next skips it:
      -- that worker was not woken, and each add sets the marker itself.
      if passWakeUp and (rcall("LLEN", keys.wait) > 0 or rcall("ZCARD", keys.prioritized) > 0) then
        rcall("ZADD", keys.marker, 0, "0")
      end
      emitEvent(keys.events, maxEvents, "active", jobId)
      return { jobId, hash, nextDelayed, 0 }
    end
    rcall("LREM", keys.active, 1, jobId)
    emitEvent(keys.events, maxEvents, "removed", jobId, "reason", "job hash missing at pickup")
  end
  return { 0, {}, nextDelayed, 0 }
end
