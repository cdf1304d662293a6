-- Generated from lua-src/cancelJob-12.lua by `npm run build:lua`: edit the source, not this file.
--[[
  cancelJob-12 · queue.cancelJob(): a job still to run fails at once as cancelled, without another
  attempt; a job a worker holds (or held: in active) is marked for its worker. A job of a flow
  tells its parent as a finish does (a notice), and takes its flow keys with it when removed.

  KEYS[1] wait  [2] paused  [3] active  [4] prioritized  [5] delayed  [6] failed  [7] meta
      [8] events  [9] the job's hash  [10] waiting-children  [11] notices  [12] notice-data
  ARGV[1] jobId  [2] reason ("" = none)  [3] now (ms)  [4] keep count in failed (-1 = all, 0 =
      remove the job now)  [5] keep age ms (0 = any)  [6] events max length
      [7] job-key prefix "P:{Q}:"
  Returns, in the order checked:
      -1 no job hash: nothing written.
       0 the job has finished (finishedOn: completed or failed): nothing written. A finished job is
         not cancelled after the fact.
       2 its lock exists (a worker runs it), or it is in active without one (its worker died and
         the stalled sweep has not given it back yet): the job is marked, field `cxl` = the reason
         (the field's presence is the mark, "" for no reason; a job marked already keeps its first
         reason, here and below), and the meta field `cancels` is incremented (HINCRBY), which every worker reads
         at each heartbeat tick: a worker that holds marked jobs fails them as cancelled, not
         retried, and a pickup of a marked job fails it at once without running its handler.
         Nothing else is written (no event: the worker's failure writes it).
       1 it was waiting, paused, prioritized, delayed, or a parent in waiting-children: taken out,
         and failed as a finish without retry would (finishedOn = now, failedReason "job <id> was
         cancelled" or "job <id> was cancelled: <reason>", `cxl` = the reason; atm, stacktrace and
         the rest kept: no attempt ran), event `failed` (failedReason); then kept in failed, or
         removed with its flow keys, by the keep rule (removeOnFail, as finishFlowJobs-15 applies
         it: trimFinishedFlow, at most 1000 jobs deleted, each with its flow keys).
         A simple-mode deduplication id the job holds (`deid`, its key without a TTL naming the job)
         has its key deleted, as freeDeduplication-1 deletes it after a finish; a key with a TTL stays.
       3 as 1, for a child of a flow (`parentKey`): it also left its notice for its parent, as
         finishFlowJob-8 does: KEYS[11] child id -> now, KEYS[12] child id -> JSON [parentKey,
         "failed", failedReason, policy], the policy its `pfp` ("" none), or "remove" when it had
         none and was removed now (a child removed after it failed is no failure of its parent's,
         as removeJob-14 tells it). The runtime delivers it next (settleChildren-12 in the
         parent's slot); a sweep delivers it if the runtime dies first.
      -3 none of these (a job hash in no state): nothing written.
  Cost: ZREM prioritized, delayed and waiting-children first; then LPOS active (active holds the
  jobs running and stalled: at most the workers' concurrency); then LREM wait and paused from the
  end workers take (-1), each scanning its list up to the job (all of it when the job is not there).
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
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
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

local jobId, reason, now, prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[7]
local jobKey = KEYS[9]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if rcall("HEXISTS", jobKey, "finishedOn") == 1 then return 0 end
-- Marked already (cancelled while it ran, then given back by the stalled sweep): the first reason stands.
reason = rcall("HGET", jobKey, "cxl") or reason

local function mark()
  rcall("HSET", jobKey, "cxl", reason)
  rcall("HINCRBY", KEYS[7], "cancels", "1")
  return 2
end

if rcall("EXISTS", jobKey .. ":lock") == 1 then return mark() end
local found = rcall("ZREM", KEYS[4], jobId) == 1 or rcall("ZREM", KEYS[5], jobId) == 1
  or rcall("ZREM", KEYS[10], jobId) == 1
if not found then
  if rcall("LPOS", KEYS[3], jobId) then return mark() end
  found = rcall("LREM", KEYS[1], "-1", jobId) == 1 or rcall("LREM", KEYS[2], "-1", jobId) == 1
end
if not found then return -3 end

local failedReason = "job " .. jobId .. " was cancelled"
if reason ~= "" then failedReason = failedReason .. ": " .. reason end
rcall("HSET", jobKey, "finishedOn", now, "failedReason", failedReason, "cxl", reason)
emitEvent(KEYS[8], ARGV[6], "failed", jobId, "failedReason", failedReason)

freeDeduplicationOf(jobKey, jobId)

local keepCount, keepAgeMs = tonumber(ARGV[4]), tonumber(ARGV[5])
-- Read before the keep rule, which may delete the hash.
local link = rcall("HMGET", jobKey, "parentKey", "pfp")
if keepCount == 0 then
  removeFlowJobKeys(jobKey)
else
  rcall("ZADD", KEYS[6], now, jobId)
  if keepCount > 0 or keepAgeMs > 0 then trimFinishedFlow(KEYS[6], prefix, now, keepCount, keepAgeMs) end
end
if not link[1] then return 1 end
writeNotice({ notices = KEYS[11], noticeData = KEYS[12] }, jobId, link[1], "failed", failedReason, noticePolicy(link[2], "failed", keepCount), now)
return 3
