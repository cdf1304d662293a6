-- Generated from lua-src/moveJobFromActiveToWait-11.lua by `npm run build:lua`: edit the source, not this file.
--[[
  moveJobFromActiveToWait-11 · a job its handler gave back because the queue is rate limited
  (the handler threw RateLimitError, after worker.rateLimit(ms)): verify the lock, release it, and
  put the job back where workers take ready jobs, next in line, WITHOUT counting an attempt.

  KEYS[1] active  [2] wait  [3] paused  [4] meta  [5] prioritized  [6] pc  [7] marker
      [8] events  [9] stalled  [10] the job's hash  [11] the job's lock
  ARGV[1] jobId  [2] token  [3] events max length
  Returns 1 when moved; -1 (no job hash), -2 (no lock), -6 (another token) or -3 (not in active)
      when nothing changed: the checks of every script that takes a job out of active, in the same
      order, and the release, but `atm` is left as it is: the attempt did not happen
      (releaseUncounted, as moveToDelayed-7).
  The job goes to the right end of wait (taken next) or, with a priority, back to prioritized; to
  paused while the queue is paused. `ats`, the fencing number, keeps the pickup's increment (it
  never goes down). Event: waiting, prev active. The ready marker is set as for any job made
  ready: a worker that ignores the limit may take it at once (docs/limits.md says which).
]]
local rcall = redis.call
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
-- [lua-src/includes/releaseUncounted.lua]
-- releaseUncounted(jobKey, lockKey, activeKey, stalledKey, jobId, token): the checks of
-- releaseFromActive, in its order and before any write, and its release (the lock DELeted, the id
-- SREMed from stalled), but without counting the attempt (atm): for the moves that give a job up
-- with its attempt unused (moveToDelayed-7, moveJobFromActiveToWait-11). releaseFromActive itself
-- is part of the fixed moveToFinished-14 and cannot take a flag.
-- Returns 0 when it released the job, else the code (-1, -2, -6, -3) and nothing changed.
local function releaseUncounted(jobKey, lockKey, activeKey, stalledKey, jobId, token)
  if rcall("EXISTS", jobKey) == 0 then return -1 end
  local holder = rcall("GET", lockKey)
  if not holder then return -2 end
  if holder ~= token then return -6 end
  if rcall("LREM", activeKey, "-1", jobId) == 0 then return -3 end
  rcall("DEL", lockKey)
  rcall("SREM", stalledKey, jobId)
  return 0
end

local jobId, token, jobKey = ARGV[1], ARGV[2], KEYS[10]
local code = releaseUncounted(jobKey, KEYS[11], KEYS[1], KEYS[9], jobId, token)
if code ~= 0 then return code end
local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5], pc = KEYS[6], marker = KEYS[7] }
pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, true)
emitEvent(KEYS[8], ARGV[3], "waiting", jobId, "prev", "active")
return 1
