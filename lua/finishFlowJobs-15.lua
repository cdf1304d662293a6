-- Generated from lua-src/finishFlowJobs-15.lua by `npm run build:lua`: edit the source, not this file.
--[[
  finishFlowJobs-15 · the batch form of finishFlowJob-8, with fetch-next: finish several jobs of
  flows (children, or parents with flow keys) of one worker in one call, each with
  moveToFinished-14's checks and writes, and what finishFlowJob-8 adds to them: a child leaves a
  notice for its parent (KEYS[14] notices: child id -> when, KEYS[15] notice-data: child id ->
  JSON [parentKey, outcome, value, policy]: the child's `pfp`, or "remove" for a child that failed
  with none and is removed at its finish, so its parent goes on without it); a job removed at its finish takes its flow keys with
  it, and a count or age rule (removeOnComplete / removeOnFail) drops older jobs with their flow
  keys (includes/trimFinishedFlow.lua). Then it takes the next job for each finish that asked for one (fetch-next), as finishJobs-13.

  KEYS[1] wait     [2] active   [3] prioritized  [4] events  [5] stalled  [6] limiter
      [7] delayed  [8] paused   [9] meta         [10] pc     [11] marker
      [12] completed           [13] failed      [14] notices [15] notice-data
  ARGV[1] job-key prefix "P:{Q}:"   [2] now (ms): the pickups' time   [3] events max length
      [4] lockDuration ms   [5] rate limit max (0 = none)   [6] rate limit window ms
      [7] maxActive: a queue-wide concurrency, as finishJobsBounded-13's ("" = none)
      [8..] nine fields per job, as finishJobs-13's but never "retried" (jobId, token, "completed" or "failed",
            returnvalue or failedReason, stacktrace, keep count, keep age ms, next lock token
            or "", finishedOn: also the notice's time)
  Returns { results, nextDelayedAt, rateLimitedForMs }, as finishJobs-13: per job its code (0;
      -1, -2, -6 or -3 and then that job is left as it was, no notice written), the next job's
      id or 0, its hash or {}.
  Why: a child finished by finishFlowJob-8 costs a script call of its own and, without fetch-next,
  a pickup (moveToActive-11) from the worker's one fetch loop: at concurrency 10 the children ran
  a round trip apart. Only a final outcome comes here: a failure that will be retried goes to
  retryJob-12. The notice is settled in the parent's slot next (settleChildren-12), as after
  finishFlowJob-8. The job, lock and flow keys are built from the prefix (as finishJobs-13's).
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
-- [lua-src/includes/readyAfterRetry.lua]
-- readyAfterRetry(keys, jobId, jobKey, dueAt, failedReason, maxEvents): the way back of a failed
-- attempt whose lock was released for a retry (retryJob-12; finishJobs-13's target "retried").
-- With dueAt (ms, a string: formatted once for its three writes) it goes to delayed and the marker
-- is told when, with an event delayed; without, back to ready (pushReady: wait, prioritized or
-- paused by its stored priority, the marker set), with an event waiting (prev failed). keys holds
-- wait, paused, meta, prioritized, pc, marker, delayed and events; maxEvents false leaves the
-- events stream's trim to the caller.
local function readyAfterRetry(keys, jobId, jobKey, dueAt, failedReason, maxEvents)
  if dueAt then
    rcall("ZADD", keys.delayed, dueAt, jobId)
    rcall("ZADD", keys.marker, dueAt, "1")
    emitEvent(keys.events, maxEvents, "delayed", jobId, "delay", dueAt, "failedReason", failedReason)
  else
    pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false)
    emitEvent(keys.events, maxEvents, "waiting", jobId, "prev", "failed", "failedReason", failedReason)
  end
end
-- [lua-src/includes/finishBatch.lua]
-- finishBatch(keys, completedKey, failedKey, firstJobArg, maxActive): the body of finishJobs-13 and
-- finishJobsBounded-13. ARGV[1..6] are finishJobs-13's (prefix, now, events max length,
-- lockDuration, rate-limit max and window); the nine fields of each job begin at ARGV[firstJobArg].
-- Finishes every job (each with its own lock check), then takes the next job for each finish that
-- asked for one (fetch-next).
-- maxActive (nil: no bound) is a queue-wide concurrency (Queue.setGlobalConcurrency): the
-- fetch-nexts take at most as many jobs as active has room for once this call's finishes left it,
-- so the bound holds even after it was lowered. Then, when active still has room and ready work is
-- left behind (and the queue is neither paused nor rate limited), it sets the ready marker: a
-- worker blocked on it because active was full learns that a slot freed, and nobody waits
-- drainDelay for it.
-- flow (nil for finishJobs-13 and finishJobsBounded-13) makes it finishFlowJobs-15: { notices,
-- noticeData, keysOf = flowKeysOf, trim = trimFinishedFlow, policyOf = noticePolicy }. Each finished job then does what finishFlowJob-8 does: a job
-- removed at its finish takes its flow keys with it, and a child leaves its notice for its parent
-- (one ZADD and one HSET for all the call's notices, written before any pickup, as the deferred
-- writes are).
-- A job whose outcome is "retried" (finishJobs-13 and finishJobsBounded-13 only) is a failed
-- attempt with attempts left, as retryJob-12 takes it: the same lock check and codes, atm counted,
-- failedReason and stacktrace written; it goes back to ready (or to delayed, its sixth field a
-- delay in ms) once this call's pickups are done, so that its own fetch-next never takes it back
-- at once (readyAfterRetry).
-- Returns { results, nextDelayedAt, rateLimitedForMs } (see finishJobs-13).

-- trimPending(deferred, trims, setKey, prefix): runs the count rule gathered for setKey
-- (finishBatchedJob) once for the call's finishes so far: one ZADD, ZCARD and ZPOPMIN, and the
-- dropped jobs' hash, logs and lock go to the call's one DEL. Keeping the newest N after each of
-- several adds leaves the same jobs as keeping the newest N once after all of them (a job dropped
-- at some step has N newer ones that all stay). Shares the call's trimBudget (trimFinished, which
-- finishJob includes).
-- A fetch-next job's hash for the reply: a small one as one JSON string, so that Node decodes one
-- reply string with JSON.parse instead of every field and value as a reply string of its own (RESP
-- decoding was the largest part of a worker's CPU at concurrency 50); a big one (over
-- JSON_REPLY_MAX_BYTES of fields and values) as the flat array, since cjson escapes every quote in
-- Redis's one thread and the reply grows (a 13 KB job cost Redis 50-75% more encoded). The encode
-- runs after the call's writes, so a failure falls back to the flat array instead of failing a
-- call whose work is done. The runtime reads both shapes.
local JSON_REPLY_MAX_BYTES = 2048
local function encodedHash(hash)
  local bytes = 0
  for i = 1, #hash do
    bytes = bytes + #hash[i]
    if bytes > JSON_REPLY_MAX_BYTES then return hash end
  end
  local ok, encoded = pcall(cjson.encode, hash)
  if ok then return encoded end
  return hash
end

local function trimPending(deferred, trims, setKey, prefix)
  local keepCount = trims[setKey]
  if not keepCount then return end
  trims[setKey] = nil
  flushZadd(deferred, setKey)
  if trimBudget <= 0 then return end
  local extra = math.min(rcall("ZCARD", setKey) - keepCount, trimBudget)
  if extra <= 0 then return end
  local popped = rcall("ZPOPMIN", setKey, extra)
  trimBudget = trimBudget - #popped / 2
  local dels = deferred.dels
  for j = 1, #popped, 2 do
    local jobKey = prefix .. popped[j]
    local n = #dels
    dels[n + 1], dels[n + 2], dels[n + 3] = jobKey, jobKey .. ":logs", jobKey .. ":lock"
  end
end

-- releaseToRemove(key, lockKey, jobId, token, activeKey, deferred): releaseFromActive for a job its
-- finish removes, with the same checks and codes in the same order, but no count of the attempt
-- (HINCRBY atm) on a hash the call deletes. releaseFromActive itself is moveToFinished-14's (fixed).
local function releaseToRemove(key, lockKey, jobId, token, activeKey, deferred)
  if rcall("EXISTS", key) == 0 then return -1 end
  local holder = rcall("GET", lockKey)
  if not holder then return -2 end
  if holder ~= token then return -6 end
  if rcall("LREM", activeKey, "-1", jobId) == 0 then return -3 end
  deferred.dels[#deferred.dels + 1] = lockKey
  deferred.unstall[#deferred.unstall + 1] = jobId
  return 0
end

-- finishJob's job table, for the finishes that go through it or keep their fields for later
-- (an age rule, a job of a flow, a retry). The common case takes its fields as arguments instead.
local function jobTable(key, lockKey, jobId, token, target, value, stacktrace, keepCount, keepAgeMs)
  return { key = key, lockKey = lockKey, id = jobId, token = token, target = target, value = value,
    stacktrace = stacktrace, keepCount = keepCount, keepAgeMs = keepAgeMs }
end

-- finishBatchedJob(keys, key, lockKey, jobId, token, target, value, stacktrace, keepCount,
--   keepAgeMs, targetKey, prefix, now, deferred, trims): finishJob for a job of a batch without
-- flows, its fields as finishJob's job table holds them (made here only for an age rule), with the
-- two rules most queues set made one command per call instead of a few per job (finishJob itself
-- is moveToFinished-14's, fixed):
-- - removed now (keep count 0): no HSET of an outcome nobody reads nor HINCRBY of its attempts
--   (releaseToRemove), and the hash and logs go to the call's one DEL with the lock (the
--   completed or failed event still carries the outcome);
-- - a count alone (keep count > 0, no age): the job's ZADD is deferred and the count rule runs
--   once per set and call (trimPending), before applyDeferred.
-- Keep all is finishJob's deferred ZADD, written here too; an age rule goes through finishJob.
-- Any other rule on a set with a pending count rule (keep all, an age, another count) runs that
-- trim first, so every rule applies to the jobs finished before it, in ARGV order, as one finish
-- after another would.
local function finishBatchedJob(keys, key, lockKey, jobId, token, target, value, stacktrace, keepCount, keepAgeMs,
    targetKey, prefix, now, deferred, trims)
  local removed = keepCount == 0
  if not removed then
    local pending = trims[targetKey]
    if pending and (pending ~= keepCount or keepAgeMs > 0) then trimPending(deferred, trims, targetKey, prefix) end
    if keepAgeMs > 0 then
      local job = jobTable(key, lockKey, jobId, token, target, value, stacktrace, keepCount, keepAgeMs)
      return finishJob(keys, job, targetKey, prefix, now, false, deferred)
    end
  end
  local code
  if removed then
    code = releaseToRemove(key, lockKey, jobId, token, keys.active, deferred)
  else
    code = releaseFromActive(key, lockKey, keys.active, jobId, token, deferred)
  end
  if code ~= 0 then return code end
  if target == "completed" then
    if not removed then rcall("HSET", key, "finishedOn", now, "returnvalue", value) end
    emitEvent(keys.events, false, "completed", jobId, "returnvalue", value)
  else
    if not removed then rcall("HSET", key, "finishedOn", now, "failedReason", value, "stacktrace", stacktrace) end
    emitEvent(keys.events, false, "failed", jobId, "failedReason", value)
  end
  if removed then
    local dels = deferred.dels
    dels[#dels + 1], dels[#dels + 2] = key, key .. ":logs"
  else
    deferZadd(deferred, targetKey, now, jobId)
    if keepCount > 0 then trims[targetKey] = keepCount end
  end
  return 0
end

-- The empty hash of a result without a next job, one table for every such slot: the reply reads
-- it and nothing writes to it.
local NO_HASH = {}

local function finishBatch(keys, completedKey, failedKey, firstJobArg, maxActive, flow)
  local prefix, now, maxEvents, lockDuration = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
  local limiterMax, limiterDuration = tonumber(ARGV[5]), ARGV[6]

  local finished = newDeferred()
  local trims = {} -- set key -> the count rule its deferred ZADDs wait for (finishBatchedJob)
  local results, tokens, slots = {}, {}, {}
  local noticeScores, noticeData = {}, {}
  local retried -- jobs released for a retry, put back to ready after the pickups (made at the first)
  local argv = ARGV -- a local: ARGV is a global, looked up by name at each use
  local resultCount, tokenCount = 0, 0
  for i = firstJobArg, #argv, 9 do
    local jobId, target = argv[i], argv[i + 2]
    local key = prefix .. jobId
    local targetKey = target == "completed" and completedKey or failedKey
    -- The keep rule (a retry's delay in its count's place) as most finishes send it ("-1" keep
    -- all, "0" remove now, no age, no delay) is read without tonumber, which parses with strtod;
    -- any other text goes through tonumber as before.
    local keepCount, keepAgeMs = argv[i + 5], argv[i + 6]
    keepCount = keepCount == "-1" and -1 or keepCount == "0" and 0 or tonumber(keepCount)
    keepAgeMs = keepAgeMs == "0" and 0 or tonumber(keepAgeMs)
    local code
    if not flow and target ~= "retried" then
      -- The common case: the job's fields go as they are, without a table for them (a table a job,
      -- with the garbage it leaves, was about 4% of a batch of 25's instructions).
      code = finishBatchedJob(keys, key, key .. ":lock", jobId, argv[i + 1], target, argv[i + 3], argv[i + 4],
        keepCount, keepAgeMs, targetKey, prefix, argv[i + 8], finished, trims)
    else
      local job = jobTable(key, key .. ":lock", jobId, argv[i + 1], target, argv[i + 3], argv[i + 4], keepCount, keepAgeMs)
      -- Read before the finish, which may delete the hash.
      local link = flow and rcall("HMGET", job.key, "parentKey", "pfp")
      -- A flow job's count or age rule is applied below by flow.trim, which also deletes the flow
      -- keys of the jobs it drops; the finish itself keeps the job (finishJob's trim cannot).
      local trimRule = flow and job.keepCount ~= 0 and (job.keepCount > 0 or job.keepAgeMs > 0)
        and { job.keepCount, job.keepAgeMs }
      if trimRule then job.keepCount, job.keepAgeMs = -1, 0 end
      if not flow then
        -- retryJob-12's first half (its checks and codes, atm counted, the lock's DEL and the SREM
        -- from stalled deferred, failedReason and stacktrace written), inline: a function more is a
        -- closure more in every call, retry or not.
        code = releaseFromActive(job.key, job.lockKey, keys.active, jobId, job.token, finished)
        if code == 0 then
          rcall("HSET", job.key, "failedReason", job.value, "stacktrace", job.stacktrace)
          job.at = argv[i + 8]
          retried = retried or {}
          retried[#retried + 1] = job
        end
      else
        code = finishJob(keys, job, targetKey, prefix, argv[i + 8], false, finished)
      end
      if flow and code == 0 then
        if job.keepCount == 0 then rcall("UNLINK", flow.keysOf(job.key)) end
        if trimRule then
          flushZadd(finished, targetKey) -- the trim reads the set: this job must be in it
          flow.trim(targetKey, prefix, argv[i + 8], trimRule[1], trimRule[2])
        end
        if link[1] then
          local n = #noticeScores
          noticeScores[n + 1], noticeScores[n + 2] = argv[i + 8], jobId
          n = #noticeData
          noticeData[n + 1], noticeData[n + 2] = jobId, cjson.encode({ link[1], target, job.value, flow.policyOf(link[2], target, job.keepCount) })
        end
      end
    end
    local at = resultCount
    results[at + 1], results[at + 2], results[at + 3] = code, 0, NO_HASH
    resultCount = at + 3
    if code == 0 and argv[i + 7] ~= "" then
      tokenCount = tokenCount + 1
      tokens[tokenCount], slots[tokenCount] = argv[i + 7], at + 2
    end
  end
  for setKey in pairs(trims) do trimPending(finished, trims, setKey, prefix) end
  applyDeferred(keys.stalled, finished)
  if #noticeScores > 0 then
    rcall("ZADD", flow.notices, unpack(noticeScores))
    rcall("HSET", flow.noticeData, unpack(noticeData))
  end

  if maxActive then
    -- The first finishes that asked keep their fetch-next, as many as there is room for.
    local room = math.max(maxActive - rcall("LLEN", keys.active), 0)
    for i = #tokens, room + 1, -1 do
      tokens[i], slots[i] = nil, nil
    end
  end

  local nextDelayed, limitedFor, paused = 0, 0, nil
  if #tokens > 0 then
    nextDelayed = promoteDelayed(keys, prefix, tonumber(now), maxEvents)
    paused = rcall("HEXISTS", keys.meta, "paused") == 1
    if not paused then
      local ids, hashes
      ids, hashes, limitedFor = takeNextJobs(keys, prefix, tokens, lockDuration, now, false, limiterMax, limiterDuration)
      for i = 1, #ids do
        local slot = slots[i]
        results[slot], results[slot + 1] = ids[i], encodedHash(hashes[i])
      end
    end
  end
  if retried then
    -- After the pickups (readyAfterRetry): to delayed at finishedOn + delay, or back to ready.
    for _, job in ipairs(retried) do
      local dueAt = job.keepCount > 0 and tostring(tonumber(job.at) + job.keepCount) or nil
      readyAfterRetry(keys, job.id, job.key, dueAt, job.value, false)
    end
  end
  if maxActive and limitedFor == 0 and rcall("LLEN", keys.active) < maxActive
    and (rcall("LLEN", keys.wait) > 0 or rcall("ZCARD", keys.prioritized) > 0) then
    if paused == nil then paused = rcall("HEXISTS", keys.meta, "paused") == 1 end
    if not paused then rcall("ZADD", keys.marker, "0", "0") end
  end
  trimEvents(keys.events, maxEvents) -- the events above were added untrimmed
  return { results, nextDelayed, limitedFor }
end
-- [lua-src/includes/flowParent.lua]
-- The parent side of flows (docs/protocol.md, "Flows"): a parent P:{Q}:<pid> with children keeps
--   P:{Q}:<pid>:dependencies  set   child job keys not settled yet (a child that failed with no
--                                   policy stays here: the parent waits, as BullMQ's does)
--   P:{Q}:<pid>:processed     hash  child job key -> its returnvalue (JSON)
--   P:{Q}:<pid>:unsuccessful  hash  child job key -> failedReason (failed: no policy, fail, continue)
--   P:{Q}:<pid>:ignored       hash  child job key -> failedReason (ignoreDependencyOnFailure)
--   P:{Q}:<pid>:pending       hash  child job key -> the child's creation spec, until the producer
--                                   said it made it (the intent a sweep rolls forward)
-- and waits in P:{Q}:waiting-children (zset, scored by when it began to wait).

-- flowKeysOf(jobKey): every flow key of a job, for DEL when the job goes.
local function flowKeysOf(jobKey)
  return jobKey .. ":dependencies", jobKey .. ":processed", jobKey .. ":unsuccessful",
    jobKey .. ":ignored", jobKey .. ":pending"
end

-- writeNotice(keys, jobId, parentKey, outcome, value, policy, now): the child's side of a settle,
-- kept in the child's own slot until the parent's slot has it (keys: { notices, noticeData }).
-- Returns the notice's JSON: its deliverer deletes it only while it still holds that
-- (ackNotices-2), so a newer notice of the same child stays.
local function writeNotice(keys, jobId, parentKey, outcome, value, policy, now)
  local notice = cjson.encode({ parentKey, outcome, value, policy })
  rcall("ZADD", keys.notices, now, jobId)
  rcall("HSET", keys.noticeData, jobId, notice)
  return notice
end

-- noticePolicy(pfp, outcome, keepCount): the policy a child's notice carries: its own (`pfp`, ""
-- for none), but "remove" for a child that failed with none and was removed at its finish (keep
-- count 0): a removed child is no failure of its parent's (as removeJob-14 tells it), so its
-- parent goes on without it at once, as BullMQ's does, instead of waiting for a child that is gone.
local function noticePolicy(pfp, outcome, keepCount)
  local policy = pfp or ""
  if policy == "" and outcome == "failed" and keepCount == 0 then return "remove" end
  return policy
end

-- startParent(keys, parentId, parentKey, now, maxEvents): every child settled (or the policy says
-- go on): the parent leaves waiting-children for wait (paused, prioritized) or delayed, as its own
-- options say. keys: { wait, paused, meta, delayed, prioritized, pc, marker, events, waitingChildren }.
local function startParent(keys, parentId, parentKey, now, maxEvents)
  rcall("ZREM", keys.waitingChildren, parentId)
  local fields = rcall("HMGET", parentKey, "delay", "priority", "lifo")
  local delay = tonumber(fields[1] or "0") or 0
  if delay > 0 then
    local dueAt = tonumber(now) + delay
    rcall("ZADD", keys.delayed, dueAt, parentId)
    rcall("ZADD", keys.marker, dueAt, "1")
    emitEvent(keys.events, maxEvents, "delayed", parentId, "delay", dueAt)
    return
  end
  pushReady(keys, parentId, tonumber(fields[2] or "0") or 0, fields[3] == "1")
  emitEvent(keys.events, maxEvents, "waiting", parentId)
end

-- failParent(keys, parentId, parentKey, childKey, reason, now, maxEvents, keepCount): failParentOnFailure:
-- the waiting parent fails, its reason naming the child. A parent that is itself a child leaves
-- its own notice (keys.notices, keys.noticeData), so its parent hears of it, with the policy
-- noticePolicy gives for its keep count (0: it is removed next, so a parent of its own with no
-- policy for it lets it go). Returns true when it left a notice.
local function failParent(keys, parentId, parentKey, childKey, reason, now, maxEvents, keepCount)
  rcall("ZREM", keys.waitingChildren, parentId)
  local failedReason = "child " .. childKey .. " failed: " .. reason
  rcall("HSET", parentKey, "finishedOn", now, "failedReason", failedReason)
  rcall("ZADD", keys.failed, now, parentId)
  emitEvent(keys.events, maxEvents, "failed", parentId, "failedReason", failedReason)
  local link = rcall("HMGET", parentKey, "parentKey", "pfp")
  if not link[1] then return false end
  writeNotice(keys, parentId, link[1], "failed", failedReason, noticePolicy(link[2], "failed", keepCount), now)
  return true
end
-- [lua-src/includes/trimFinishedFlow.lua]
-- trimFinishedFlow(setKey, prefix, now, keepCount, keepAgeMs): trimFinished's rule for a finish of
-- a job of a flow (finishFlowJobs-15): the jobs it drops take their flow keys (a parent's
-- :dependencies, :processed, ...) with them, by UNLINK (a step parent's :processed has no bound). trimFinished itself cannot: it is inlined in the fixed
-- moveToFinished-14, whose text never changes. The same bound (at most FLOW_TRIM_BUDGET jobs per
-- script call, over all its trims), the same order (the oldest first).
local FLOW_TRIM_BUDGET = 1000
local flowTrimBudget = FLOW_TRIM_BUDGET
local function trimFinishedFlow(setKey, prefix, now, keepCount, keepAgeMs)
  if flowTrimBudget <= 0 then return end
  local doomed = {}
  if keepAgeMs > 0 then
    doomed = rcall("ZRANGEBYSCORE", setKey, "0", tonumber(now) - keepAgeMs, "LIMIT", "0", flowTrimBudget)
    if #doomed > 0 then rcall("ZREM", setKey, unpack(doomed)) end
  end
  if keepCount >= 0 then
    local extra = math.min(rcall("ZCARD", setKey) - keepCount, flowTrimBudget - #doomed)
    if extra > 0 then
      local popped = rcall("ZPOPMIN", setKey, extra)
      for i = 1, #popped, 2 do doomed[#doomed + 1] = popped[i] end
    end
  end
  flowTrimBudget = flowTrimBudget - #doomed
  for _, jobId in ipairs(doomed) do
    removeJobKeys(prefix .. jobId)
    rcall("UNLINK", flowKeysOf(prefix .. jobId))
  end
end

return finishBatch(pickupKeys(), KEYS[12], KEYS[13], 8, tonumber(ARGV[7]),
  { notices = KEYS[14], noticeData = KEYS[15], keysOf = function(jobKey) return flowKeysOf(jobKey) end,
    trim = function(...) return trimFinishedFlow(...) end, policyOf = function(...) return noticePolicy(...) end })
