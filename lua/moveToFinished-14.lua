-- Generated from lua-src/moveToFinished-14.lua by `npm run build:lua`: edit the source, not this file.
--[[
  moveToFinished-14 · verify the lock, finish the job (completed or failed), release the lock,
  and optionally take the next job in the same call (fetch-next).

  KEYS[1] wait     [2] active   [3] prioritized  [4] events  [5] stalled  [6] limiter
      [7] delayed  [8] paused   [9] meta         [10] pc     [11] marker
      [12] target set (completed or failed)      [13] the job's hash      [14] the job's lock
  ARGV[1] jobId    [2] token    [3] now (ms)     [4] "completed" or "failed"
      [5] returnvalue (JSON) when completed, failedReason when failed
      [6] stacktrace (JSON array) when failed, "" otherwise
      [7] keep count in the target set (-1 = all, 0 = remove the job now)  [8] keep age ms (0 = any)
      [9] fetch next: "1" or "0"   [10] job-key prefix "P:{Q}:"   [11] next lock token
      [12] lockDuration ms         [13] events max length
      [14] rate limit max (0 = none)   [15] rate limit window ms
  Returns -1 (no job), -2 (no lock), -6 (another token), -3 (not in active): nothing changed.
      Otherwise the pickup result of moveToActive-11 for the next job ({0, {}, ...} when none was
      asked for or none was ready).
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
-- [lua-src/includes/deferred.lua]
-- newDeferred() and applyDeferred(stalledKey, deferred): writes a script gathers while it releases
-- jobs and sends once after: one DEL for every lock it released, one SREM of the stalled set for
-- every job it released, one ZADD per finished set. A batch of N jobs (finishJobs-13)
-- then costs these commands once instead of N times each; a single-job script sends the same
-- commands as before, only later in the same call. Nothing in a script reads these keys after it
-- gathered them (a released job is never taken again by the same call), so the order changes no
-- outcome. A script applies the finishes' deferred writes before it starts a pickup: Redis does
-- not roll back a script that fails half-way, and a finished job must never be left out of its
-- set with its lock still set because the pickup after it failed.
local function newDeferred()
  return { dels = {}, unstall = {}, zadds = {} }
end

-- Adds member with score to the set's deferred ZADD.
local function deferZadd(deferred, setKey, score, member)
  local args = deferred.zadds[setKey]
  if not args then
    args = {}
    deferred.zadds[setKey] = args
  end
  args[#args + 1] = score
  args[#args + 1] = member
end

-- Sends the deferred ZADD of one set now (before a trim reads that set).
local function flushZadd(deferred, setKey)
  local args = deferred.zadds[setKey]
  if args then
    rcall("ZADD", setKey, unpack(args))
    deferred.zadds[setKey] = nil
  end
end

local function applyDeferred(stalledKey, deferred)
  if #deferred.dels > 0 then rcall("DEL", unpack(deferred.dels)) end
  if #deferred.unstall > 0 then rcall("SREM", stalledKey, unpack(deferred.unstall)) end
  for setKey in pairs(deferred.zadds) do flushZadd(deferred, setKey) end
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
-- [lua-src/includes/releaseFromActive.lua]
-- releaseFromActive(jobKey, lockKey, activeKey, jobId, token, deferred): the verify-and-release
-- step of every script that takes a job out of active (moveToFinished-14, finishJobs-13,
-- retryJob-12). Checks first, before anything changes: -1 no job hash (JobNotExist), -2 no lock
-- (JobLockNotExist), -6 another token holds it (JobLockMismatch), -3 not in active (JobNotInState).
-- Then takes the job out of active and counts the attempt in atm; the lock's DEL and the SREM
-- from stalled go to `deferred` (sent at the end of the same call).
-- Returns 0 when it released the job, else the code (and nothing changed).
local function releaseFromActive(jobKey, lockKey, activeKey, jobId, token, deferred)
  if rcall("EXISTS", jobKey) == 0 then return -1 end
  local holder = rcall("GET", lockKey)
  if not holder then return -2 end
  if holder ~= token then return -6 end
  if rcall("LREM", activeKey, "-1", jobId) == 0 then return -3 end
  rcall("HINCRBY", jobKey, "atm", "1")
  deferred.dels[#deferred.dels + 1] = lockKey
  deferred.unstall[#deferred.unstall + 1] = jobId
  return 0
end
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
end
-- [lua-src/includes/trimFinished.lua]
-- trimFinished(setKey, prefix, now, keepCount, keepAgeMs): the removeOnComplete / removeOnFail rule,
-- run after a finished job was added to setKey. keepCount < 0 keeps every job; otherwise only the
-- newest keepCount stay. keepAgeMs > 0 also drops jobs that finished more than keepAgeMs ago.
-- The two common rules never come here (finishJob): keep all costs one deferred ZADD, remove
-- now one DEL.
-- Bounded work: one script call deletes at most TRIM_BUDGET jobs, over all its trims (the
-- finishes of a finishJobs-13 batch share it). A script runs alone in Redis, and deleting a
-- whole backlog at once (removeOnComplete lowered from keep-all to a count on a set of 200,000
-- jobs: about a second) would stall every worker's heartbeat. Such a backlog shrinks instead over
-- the following finishes, by up to TRIM_BUDGET - 1 a finish; the set holds more than the rule
-- says until then. In the steady state (one job over the count per finish) the count rule costs
-- what it did: one ZCARD, one ZPOPMIN, one DEL.
-- now is the ARGV string; the age cut-off is arithmetic, so that one is a Lua number.
local TRIM_BUDGET = 1000
local trimBudget = TRIM_BUDGET -- left in this script call (a script's body runs afresh each call)
local function trimFinished(setKey, prefix, now, keepCount, keepAgeMs)
  if trimBudget <= 0 then return end
  local doomed = {}
  if keepAgeMs > 0 then
    doomed = rcall("ZRANGEBYSCORE", setKey, "0", tonumber(now) - keepAgeMs, "LIMIT", "0", trimBudget)
    if #doomed > 0 then rcall("ZREM", setKey, unpack(doomed)) end
  end
  if keepCount >= 0 then
    -- The oldest first, as ranks go: ZPOPMIN takes them out and names them in one command.
    local extra = math.min(rcall("ZCARD", setKey) - keepCount, trimBudget - #doomed)
    if extra > 0 then
      local popped = rcall("ZPOPMIN", setKey, extra)
      for i = 1, #popped, 2 do doomed[#doomed + 1] = popped[i] end
    end
  end
  trimBudget = trimBudget - #doomed
  for _, jobId in ipairs(doomed) do removeJobKeys(prefix .. jobId) end
end
-- [lua-src/includes/finishJob.lua]
-- finishJob(keys, job, targetKey, prefix, now, maxEvents, deferred): the finishing step of
-- moveToFinished-14 and of each job of finishJobs-13. Verifies and releases the lock
-- (releaseFromActive), stores the outcome, emits completed or failed, then keeps the job in the
-- target set or removes it (removeOnComplete / removeOnFail).
-- keys: { active, events }. job: { key, lockKey, id, token, target, value, stacktrace,
-- keepCount, keepAgeMs }: target is "completed" (value = returnvalue JSON) or "failed" (value =
-- failedReason, stacktrace = JSON array); keepCount -1 keeps all, 0 removes the job now.
-- now and maxEvents are the ARGV strings, written as they are (maxEvents false: see emitEvent).
-- Returns 0, or the code of releaseFromActive (-1, -2, -6, -3) with nothing changed.
local function finishJob(keys, job, targetKey, prefix, now, maxEvents, deferred)
  local code = releaseFromActive(job.key, job.lockKey, keys.active, job.id, job.token, deferred)
  if code ~= 0 then return code end
  if job.target == "completed" then
    rcall("HSET", job.key, "finishedOn", now, "returnvalue", job.value)
    emitEvent(keys.events, maxEvents, "completed", job.id, "returnvalue", job.value)
  else
    rcall("HSET", job.key, "finishedOn", now, "failedReason", job.value, "stacktrace", job.stacktrace)
    emitEvent(keys.events, maxEvents, "failed", job.id, "failedReason", job.value)
  end
  if job.keepCount == 0 then
    removeJobKeys(job.key)
  elseif job.keepCount > 0 or job.keepAgeMs > 0 then
    -- The trim reads the set: it must see every job finished so far, this one included.
    flushZadd(deferred, targetKey)
    rcall("ZADD", targetKey, now, job.id)
    trimFinished(targetKey, prefix, now, job.keepCount, job.keepAgeMs)
  else
    deferZadd(deferred, targetKey, now, job.id)
  end
  return 0
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

local now, prefix, maxEvents = ARGV[3], ARGV[10], ARGV[13]
local keys = pickupKeys()
local job = { key = KEYS[13], lockKey = KEYS[14], id = ARGV[1], token = ARGV[2], target = ARGV[4],
  value = ARGV[5], stacktrace = ARGV[6], keepCount = tonumber(ARGV[7]), keepAgeMs = tonumber(ARGV[8]) }
local finished = newDeferred()
local code = finishJob(keys, job, KEYS[12], prefix, now, maxEvents, finished)
if code ~= 0 then return code end
applyDeferred(keys.stalled, finished)

if ARGV[9] ~= "1" then return { 0, {}, 0, 0 } end
return pickup(keys, prefix, ARGV[11], ARGV[12], now, maxEvents, tonumber(ARGV[14]), ARGV[15], false)
