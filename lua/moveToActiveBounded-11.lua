-- Generated from lua-src/moveToActiveBounded-11.lua by `npm run build:lua`: edit the source, not this file.
--[[
  moveToActiveBounded-11 · pickup, as moveToActive-11, unless the queue already holds `maxActive`
  jobs in active: a partitioned queue's partitionConcurrency (docs/protocol.md, "Partitioned
  queues"), the bound every worker of the queue checks here, so it holds across processes.

  KEYS as moveToActive-11: [1] wait  [2] active  [3] prioritized  [4] events  [5] stalled
      [6] limiter  [7] delayed  [8] paused  [9] meta  [10] pc  [11] marker
  ARGV as moveToActive-11 ([1] job-key prefix  [2] lock token  [3] lockDuration ms  [4] now (ms)
      [5] events max length  [6] rate limit max (0 = none)  [7] rate limit window ms), then
      [8] maxActive: take nothing while active holds this many jobs (or more)
  Returns { jobId, job hash, nextDelayedAt, rateLimitedForMs } as moveToActive-11, with a fifth
      element 1 when nothing was taken because active is full (0 otherwise). Due delayed jobs are
      promoted either way, so nextDelayedAt stays true.
  A job in active counts until it leaves active: a finish, a retry, or the stalled sweep.
]]
local rcall = redis.call
-- [lua-src/includes/pickupKeys.lua]
-- pickupKeys(): the keys table of pickup() and takeNextJobs(), read from KEYS[1..11], the fixed
-- order of the eleven pickup KEYS that moveToActive-11, moveToFinished-14 and finishJobs-13 open
-- with: [1] wait [2] active [3] prioritized [4] events [5] stalled [6] limiter [7] delayed
-- [8] paused [9] meta [10] pc [11] marker. Written once here (the TypeScript side builds the same
-- order from PICKUP_KEYS in lib/protocol/scripts.ts; a test compares the two).
local function pickupKeys()
  return {
    wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4], stalled = KEYS[5],
    limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8], meta = KEYS[9], pc = KEYS[10],
    marker = KEYS[11]
  }
end
-- [lua-src/includes/emitEvent.lua]
-- emitEvent(eventsKey, maxEvents, name, jobId, ...extra field/value pairs)
-- Every lifecycle event is one XADD trimmed to about maxEvents entries, so the stream stays bounded.
-- maxEvents is the ARGV string as the runtime sent it: a Lua number given to redis.call is
-- formatted with %.17g on every call, which costs more than many commands (see docs/protocol.md).
-- A batch script passes false and trims once at its end (trimEvents): the stream is over its
-- bound by at most that call's events, for the length of the call.
local function emitEvent(eventsKey, maxEvents, name, jobId, ...)
  if maxEvents then
    rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", name, "jobId", jobId, ...)
  else
    rcall("XADD", eventsKey, "*", "event", name, "jobId", jobId, ...)
  end
end

-- trimEvents(eventsKey, maxEvents): the one trim of a batch script's untrimmed events.
local function trimEvents(eventsKey, maxEvents)
  rcall("XTRIM", eventsKey, "MAXLEN", "~", maxEvents)
end
-- [lua-src/includes/pushReady.lua]
-- placeReady(keys, jobId, priority, lifo, paused): put a job where workers take ready jobs from.
-- keys: { wait, paused, meta, prioritized, pc, marker }.
-- A priority > 0 goes to the prioritized zset, scored priority * 2^32 + a counter (pc) so jobs of one
-- priority keep FIFO order. Otherwise the wait list, or the paused list while the queue is paused;
-- workers take from the right end, so FIFO pushes left and LIFO pushes right.
local function placeReady(keys, jobId, priority, lifo, paused)
  if priority > 0 then
    local seq = rcall("INCR", keys.pc) % 4294967296
    rcall("ZADD", keys.prioritized, priority * 4294967296 + seq, jobId)
  else
    rcall(lifo and "RPUSH" or "LPUSH", paused and keys.paused or keys.wait, jobId)
  end
end

-- pushReady(keys, jobId, priority, lifo): placeReady, then wake one worker blocked on BZPOPMIN
-- with the marker; a paused queue wakes nobody.
local function pushReady(keys, jobId, priority, lifo)
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  placeReady(keys, jobId, priority, lifo, paused)
  if not paused then rcall("ZADD", keys.marker, "0", "0") end
end
-- [lua-src/includes/promoteDelayed.lua]
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
-- [lua-src/includes/pickup.lua]
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

local keys = pickupKeys()
if rcall("LLEN", keys.active) >= tonumber(ARGV[8]) then
  local nextDelayed = promoteDelayed(keys, ARGV[1], tonumber(ARGV[4]), ARGV[5])
  return { 0, {}, nextDelayed, 0, 1 }
end
local reply = pickup(keys, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7], true)
reply[5] = 0
return reply
