-- Generated from lua-src/cleanJobsInSet-2.lua by `npm run build:lua`: edit the source, not this file.
--[[
  cleanJobsInSet-2 · queue.clean(), one window of it: look at the ids of one state from a rank on
  (at most 500), and remove those older than a cut-off, up to a limit. The runtime calls again
  from the rank it answers until the limit or the end of the state (Queue.clean).
  The state is a list (wait, paused, active) or a zset (prioritized, delayed, completed, failed).

  KEYS[1] the state's key  [2] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] cut-off timestamp ms: jobs at or before it go
      [3] limit: remove at most this many in this call (0 = no limit)  [4] events max length
      [5] the rank to start at (0 on the first call)
  Returns { removed ids, next rank }: the next rank is where the next call starts (the ids this
      call kept stay before it), or -1 when this window reached the end of the state.
  Age is finishedOn for finished jobs and timestamp (creation) for the others; an id without a
  hash counts as old. Jobs whose lock is held are never removed. Ranks go as LRANGE and ZRANGE
  give them: a list from its left end, a zset from its lowest score.
  Bounded work: a script runs alone in Redis, so one call reads one window of at most WINDOW ids
  (LRANGE or ZRANGE of that window only) and removes the chosen ones with one command: ZREM of
  them all for a zset; for a list, each one's slot is overwritten with a sentinel (LSET) and one
  LREM, counted and from the nearer end, takes the sentinels out. A window takes about 2 ms on a
  zset and 2.5 to 3.5 ms on a list of 200,000 (at worst 8). Reading the whole state, with an LREM per id that scans the
  list each time, took 1.5 s for 200,000 finished jobs, and grew with the square of a list's
  length: 3.8 s for a list of 20,000. A job that moves between two calls may be missed or looked
  at twice: clean is a sweep, not a snapshot.
  A removed job's flow keys go with it (removeFlowJobKeys), and a simple-mode deduplication key
  naming it (freeDeduplicationOf: no TTL). Its parent, in another queue, is not
  told (no script can reach its slot): docs/flows.md, "Removing jobs of a flow".
  Emits one `cleaned` event (with this call's count) per call that removed jobs.
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
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
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
-- [lua-src/includes/removeFlowJobKeys.lua]
-- removeFlowJobKeys(jobKey): removeJobKeys and the job's flow keys (a parent's dependencies,
-- processed, unsuccessful, ignored and pending; docs/protocol.md, "Flows"), for the scripts that
-- delete jobs outside their finish (removeJob-14, drain-5, cleanJobsInSet-2, obliterate-2).
-- removeJobKeys itself stays as it is: it is part of the fixed moveToFinished-14.
-- The flow keys go with UNLINK (allowed in scripts): `:processed` has no bound (a step job adds
-- children round after round, each with its returnvalue), and UNLINK takes a big key out of the
-- keyspace at once and frees its memory in a background thread, so the script's own work does not
-- grow with it (a small key is freed at once, as DEL would).
local function removeFlowJobKeys(jobKey)
  removeJobKeys(jobKey)
  rcall("UNLINK", flowKeysOf(jobKey))
end
-- [lua-src/includes/freeDeduplication.lua]
-- freeDeduplicationOf(jobKey, jobId): a job that goes (removed, drained, cleaned, cancelled) frees
-- the simple-mode deduplication id it holds: its `deid`'s key is deleted while it has no TTL and
-- still names the job, as freeDeduplication-1 does after a finish. Left, it would stay for ever,
-- naming a job that is gone. A key with a TTL (throttle mode) stays until it expires: its window
-- is the point. Call it before the job's hash is deleted.
local function freeDeduplicationOf(jobKey, jobId)
  local deid = rcall("HGET", jobKey, "deid")
  if not deid then return end
  local dedupKey = string.sub(jobKey, 1, #jobKey - #jobId) .. "de:" .. deid
  if rcall("PTTL", dedupKey) == -1 and rcall("GET", dedupKey) == jobId then rcall("DEL", dedupKey) end
end

local WINDOW = 500
-- No job id holds ":" (PROTOCOL.md, L1), so no id is the sentinel.
local SENTINEL = "echomq:cleaned:"

local setKey, prefix, cutoff, limit = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local start = tonumber(ARGV[5])
local isList = rcall("TYPE", setKey)["ok"] == "list"
local last = start + WINDOW - 1
local ids = isList and rcall("LRANGE", setKey, start, last) or rcall("ZRANGE", setKey, start, last)
local removed, looked = {}, 0
for i, jobId in ipairs(ids) do
  if limit > 0 and #removed >= limit then break end
  looked = i
  local jobKey = prefix .. jobId
  local stamps = rcall("HMGET", jobKey, "finishedOn", "timestamp")
  local at = tonumber(stamps[1]) or tonumber(stamps[2]) or 0
  if at <= cutoff and rcall("EXISTS", jobKey .. ":lock") == 0 then
    if isList then rcall("LSET", setKey, start + i - 1, SENTINEL) end
    freeDeduplicationOf(jobKey, jobId)
    removeFlowJobKeys(jobKey)
    removed[#removed + 1] = jobId
  end
end

if #removed > 0 then
  if not isList then
    rcall("ZREM", setKey, unpack(removed))
  elseif start < rcall("LLEN", setKey) - (start + looked) then
    rcall("LREM", setKey, #removed, SENTINEL) -- the window is nearer the left end
  else
    rcall("LREM", setKey, -#removed, SENTINEL)
  end
  emitEvent(KEYS[2], ARGV[4], "cleaned", "", "count", tostring(#removed))
end
if #ids < WINDOW and looked == #ids then return { removed, -1 } end
return { removed, start + looked - #removed }
