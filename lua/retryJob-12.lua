-- Generated from lua-src/retryJob-12.lua by `npm run build:lua`: edit the source, not this file.
--[[
  retryJob-12 · a failed attempt that has attempts left: verify the lock, release it, and put the
  job back to ready (delay 0) or to delayed (a backoff).

  KEYS[1] active  [2] wait  [3] paused  [4] meta  [5] prioritized  [6] pc  [7] marker
      [8] delayed  [9] events  [10] stalled  [11] the job's hash  [12] the job's lock
  ARGV[1] jobId  [2] token  [3] now (ms)  [4] delay ms (0 = ready now)  [5] failedReason
      [6] stacktrace (JSON array)  [7] events max length
  Returns 1 when moved; -1, -2, -6 or -3 (not in active) when nothing changed.
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

local jobId, token, now, delay = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local jobKey = KEYS[11]
local deferred = newDeferred()
local code = releaseFromActive(jobKey, KEYS[12], KEYS[1], jobId, token, deferred)
if code ~= 0 then return code end
applyDeferred(KEYS[10], deferred)
rcall("HSET", jobKey, "failedReason", ARGV[5], "stacktrace", ARGV[6])
local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5], pc = KEYS[6],
  marker = KEYS[7], delayed = KEYS[8], events = KEYS[9] }
local dueAt = delay > 0 and tostring(now + delay) or nil
readyAfterRetry(keys, jobId, jobKey, dueAt, ARGV[5], ARGV[7])
return 1
