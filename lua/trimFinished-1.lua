-- Generated from lua-src/trimFinished-1.lua by `npm run build:lua`: edit the source, not this file.
--[[
  trimFinished-1 · one bounded step of a keep rule (removeOnComplete / removeOnFail given as a
  count or an age) on a finished set. Each finish trims by its own job's rule, at most 1000 jobs a
  call (trimFinished, inlined in the fixed moveToFinished-14; trimFinishedFlow in the batch
  finishes): a rule lowered on a set far over it would only hold as more jobs finish, and never on
  an idle queue. A worker calls this in the stalled sweep's rhythm, with the last rule its
  finishes used on the set, again while it answers more than 0 (docs/protocol.md, "Keep rules").

  KEYS[1] the finished set (completed or failed)
  ARGV[1] job-key prefix "P:{Q}:"  [2] keep count (-1 = no count rule)  [3] keep age ms (0 = none)
      [4] now (ms)
  Deletes at most 1000 jobs, the oldest first, each with its logs, its lock and its flow keys
  (trimFinishedFlow). Returns how many jobs are still over the rule after the call (0: it holds).
]]
local rcall = redis.call
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
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

local prefix, keepCount, keepAgeMs, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
trimFinishedFlow(KEYS[1], prefix, now, keepCount, keepAgeMs)
local over = 0
if keepCount >= 0 then over = math.max(rcall("ZCARD", KEYS[1]) - keepCount, 0) end
if keepAgeMs > 0 then over = math.max(over, rcall("ZCOUNT", KEYS[1], "0", tonumber(now) - keepAgeMs)) end
return over
