-- @include emitEvent
-- @include promoteDelayed
-- popReady(keys, n): moves up to n ready ids into active, the next first: the right end of wait,
-- then the lowest scores of prioritized. Returns the ids moved. One id is one RPOPLPUSH; more are
-- one RPOP with a count and one LPUSH (Redis >= 6.2), the same order as n RPOPLPUSHes.
local function popReady(keys, n)
  local ids = {}
  if n == 1 then
    local jobId = rcall("RPOPLPUSH", keys.wait, keys.active)
    if jobId then return { jobId } end
  else
    ids = rcall("RPOP", keys.wait, n) or {}
  end
  if #ids < n then
    local best = rcall("ZPOPMIN", keys.prioritized, n - #ids)
    for i = 1, #best, 2 do ids[#ids + 1] = best[i] end
  end
  if #ids > 0 then rcall("LPUSH", keys.active, unpack(ids)) end
  return ids
end

-- takeNextJobs(keys, prefix, tokens, lockDuration, now, maxEvents, limiterMax, limiterDuration):
-- takes up to #tokens ready jobs into active and acquires each one's lock with its token:
-- SET <job>:lock <token> PX lockDuration (the seed's acquire), and counts the attempt in ats, the
-- job's fencing number; the jobs taken leave the stalled set in one SREM (a fresh owner is not
-- stalled). The caller has promoted due delayed jobs and checked that the queue is not paused.
-- now, lockDuration and maxEvents are the ARGV strings (maxEvents false: see emitEvent).
-- keys: { wait, active, prioritized, events, stalled, limiter, ... }.
-- Returns ids, hashes, rateLimitedForMs: ids[i] is the job that tokens[i] now holds, hashes[i] its
-- hash (flat, with the new ats and processedOn last); rateLimitedForMs > 0 when the limiter cut the
-- pickup short. Two arrays rather than a { jobId, hash } pair a job: a table less a job.
local function takeNextJobs(keys, prefix, tokens, lockDuration, now, maxEvents, limiterMax, limiterDuration)
  local want, limitedFor = #tokens, 0
  if limiterMax > 0 then
    local left = limiterMax - (tonumber(rcall("GET", keys.limiter)) or 0)
    if left < want then
      want = math.max(left, 0)
      limitedFor = math.max(rcall("PTTL", keys.limiter), 1)
    end
  end
  local takenIds, hashes, count = {}, {}, 0 -- count: #takenIds, kept by hand (a # is a search)
  -- A hash can be missing when a job was deleted behind the queue's back; such ids are dropped
  -- from active (with an event) and others taken in their place, instead of being handed to a
  -- worker as an empty job.
  for _ = 1, 100 do
    if count >= want then break end
    local ids = popReady(keys, want - count)
    if #ids == 0 then break end
    for k = 1, #ids do
      local jobId = ids[k]
      local jobKey = prefix .. jobId
      local hash = rcall("HGETALL", jobKey)
      if #hash > 0 then
        -- The fencing number first: a corrupt ats fails the call before this job has a lock. A
        -- job's first pickup (no ats yet) writes "1" as it is: tostring formats a Lua number with
        -- sprintf, which costs more than the rest of this loop.
        local ats = "1"
        local n = #hash
        for i = 1, n, 2 do
          if hash[i] == "ats" then ats = tostring(tonumber(hash[i + 1]) + 1) end
        end
        count = count + 1
        rcall("SET", jobKey .. ":lock", tokens[count], "PX", lockDuration)
        rcall("HSET", jobKey, "ats", ats, "processedOn", now)
        -- Later pairs win when the runtime reads the flat array, so the fresh values go last.
        hash[n + 1], hash[n + 2], hash[n + 3], hash[n + 4] = "ats", ats, "processedOn", now
        takenIds[count], hashes[count] = jobId, hash
        emitEvent(keys.events, maxEvents, "active", jobId)
      else
        rcall("LREM", keys.active, "1", jobId)
        emitEvent(keys.events, maxEvents, "removed", jobId, "reason", "job hash missing at pickup")
      end
    end
  end
  if count == 0 then return takenIds, hashes, limitedFor end
  rcall("SREM", keys.stalled, unpack(takenIds))
  if limiterMax > 0 and rcall("INCRBY", keys.limiter, count) == count then
    rcall("PEXPIRE", keys.limiter, limiterDuration)
  end
  return takenIds, hashes, limitedFor
end

-- pickup(keys, prefix, token, lockDuration, now, maxEvents, limiterMax, limiterDuration,
--   passWakeUp): the shared body of moveToActive-11 and of the fetch-next step of
-- moveToFinished-14. keys: { wait, active, prioritized, events, stalled, limiter, delayed, paused,
-- meta, pc, marker }. Promotes due delayed jobs, then (unless paused or rate limited) takes the
-- next ready job.
-- Returns { jobId or 0, job hash as a flat array, next delayed timestamp or 0, ms rate limited or 0 }.
local function pickup(keys, prefix, token, lockDuration, now, maxEvents, limiterMax, limiterDuration, passWakeUp)
  local nextDelayed = promoteDelayed(keys, prefix, tonumber(now), maxEvents)
  if rcall("HEXISTS", keys.meta, "paused") == 1 then return { 0, {}, nextDelayed, 0 } end
  local ids, hashes, limitedFor = takeNextJobs(keys, prefix, { token }, lockDuration, now, maxEvents, limiterMax, limiterDuration)
  if #ids == 0 then return { 0, {}, nextDelayed, limitedFor } end
  -- A worker woken by the marker passes the wake-up on while ready work remains, so one
  -- marker for a batch of adds still wakes every blocked worker in turn. Fetch-next skips it:
  -- that worker was not woken, and each add sets the marker itself.
  if passWakeUp and (rcall("LLEN", keys.wait) > 0 or rcall("ZCARD", keys.prioritized) > 0) then
    rcall("ZADD", keys.marker, "0", "0")
  end
  return { ids[1], hashes[1], nextDelayed, 0 }
end
