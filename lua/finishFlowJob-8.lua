-- Generated from lua-src/finishFlowJob-8.lua by `npm run build:lua`: edit the source, not this file.
--[[
  finishFlowJob-8 · finish a job of a flow (a child, or a parent with flow keys) for good:
  moveToFinished-14's checks and writes, without fetch-next, and in the same call
  - a child leaves a notice for its parent (KEYS[7] notices: child id -> when, KEYS[8]
    notice-data: child id -> JSON [parentKey, outcome, value, policy]; the policy is the child's
    `pfp`, or "remove" for a child that failed with none and is removed now): the parent lives in
    another queue's slot, so the runtime settles it next (settleChildren-12) and deletes the
    notice once that has answered; a sweep delivers notices a dead worker left;
  - a job removed at its finish (keep count 0) takes its flow keys with it, by UNLINK: a step
    parent's `:processed` has no bound, and UNLINK frees a big one outside the script.
  Only a final outcome comes here: a failure that will be retried goes to retryJob-12.

  KEYS[1] active   [2] events   [3] stalled   [4] target set (completed or failed)
      [5] the job's hash   [6] the job's lock   [7] notices   [8] notice-data
  ARGV[1] jobId    [2] token    [3] now (ms)   [4] "completed" or "failed"
      [5] returnvalue (JSON) when completed, failedReason when failed
      [6] stacktrace (JSON array) when failed, "" otherwise
      [7] keep count (-1 = all, 0 = remove the job now)   [8] keep age ms (0 = any)
      [9] job-key prefix "P:{Q}:"   [10] events max length
  Returns -1 (no job), -2 (no lock), -6 (another token), -3 (not in active): nothing changed.
      Otherwise { 0, parentKey or "", policy or "", the notice's JSON or "" }.
]]
local rcall = redis.call
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

local jobKey, jobId, now, prefix, maxEvents = KEYS[5], ARGV[1], ARGV[3], ARGV[9], ARGV[10]
-- Read before the finish, which may delete the hash.
local link = rcall("HMGET", jobKey, "parentKey", "pfp")
local job = { key = jobKey, lockKey = KEYS[6], id = jobId, token = ARGV[2], target = ARGV[4],
  value = ARGV[5], stacktrace = ARGV[6], keepCount = tonumber(ARGV[7]), keepAgeMs = tonumber(ARGV[8]) }
local finished = newDeferred()
local code = finishJob({ active = KEYS[1], events = KEYS[2] }, job, KEYS[4], prefix, now, maxEvents, finished)
if code ~= 0 then return code end
applyDeferred(KEYS[3], finished)
if job.keepCount == 0 then rcall("UNLINK", flowKeysOf(jobKey)) end
if not link[1] then return { 0, "", "", "" } end
local policy = noticePolicy(link[2], ARGV[4], job.keepCount)
local notice = writeNotice({ notices = KEYS[7], noticeData = KEYS[8] }, jobId, link[1], ARGV[4], ARGV[5], policy, now)
return { 0, link[1], policy, notice }
