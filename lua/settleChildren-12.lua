-- Generated from lua-src/settleChildren-12.lua by `npm run build:lua`: edit the source, not this file.
--[[
  settleChildren-12 · the parent's side of children that finished: record each child's outcome
  in its parent's flow keys, and start (or fail) a parent in waiting-children once the outcome
  allows. Runs in the parents' slot; the children's finishes ran in theirs (finishFlowJob-8) and
  left a notice there, deleted once this call has answered.

  KEYS[1] wait     [2] paused   [3] meta     [4] delayed   [5] prioritized   [6] pc   [7] marker
      [8] events   [9] waiting-children      [10] failed   [11] notices      [12] notice-data
  ARGV[1] job-key prefix "P:{Q}:" (the parents' queue)   [2] now (ms)   [3] events max length
      [4..] five fields per child: parent id, child job key, "completed" or "failed",
            returnvalue (JSON) when completed or failedReason when failed,
            policy ("" none, "fail", "ignore", "remove", "continue")
  Idempotent: a child that is not in its parent's dependencies any more (settled before: a notice
  delivered twice) changes nothing. A failed child with no policy stays a dependency (the parent
  waits; a retry that completes settles it then).
  Returns { codes, noticed }: codes has one entry per child, 1 settled, 0 nothing to do (settled
  before, or not a dependency), -1 no parent; noticed lists the parents failed here
  (failParentOnFailure) that are children themselves: their notices are in KEYS[11]/[12].
  A parent failed here keeps to its own removeOnFail (read from its opts): removed with its flow
  keys, or the failed set trimmed by its count or age (at most 1000 jobs, trimFinishedFlow).
  A parent not in waiting-children when a child fails with policy fail gets cfr = its failedReason
  ("child <key> failed: <reason>", the first such child's): the runtime fails it when it is next
  taken (before its handler), when it asks to wait for children (moveToWaitingChildren-7 answers
  the reason), or instead of completing it.
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

local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], delayed = KEYS[4], prioritized = KEYS[5],
  pc = KEYS[6], marker = KEYS[7], events = KEYS[8], waitingChildren = KEYS[9], failed = KEYS[10],
  notices = KEYS[11], noticeData = KEYS[12] }
local prefix, now, maxEvents = ARGV[1], ARGV[2], ARGV[3]
local codes, noticed = {}, {}

-- A parent failed here keeps to its own removeOnFail (its opts, as the runtime stored them), as a
-- failure at its finish does: true removes it with its flow keys, a count or { count, age } trims
-- the failed set (trimFinishedFlow, bounded). keepRuleOf reads it before the failure, whose notice
-- (when the parent is a child too) says whether it is removed.
local function keepRuleOf(parentKey)
  local ok, opts = pcall(cjson.decode, rcall("HGET", parentKey, "opts") or "{}")
  local rule = ok and type(opts) == "table" and opts.removeOnFail or nil
  if rule == true then return 0, 0 end
  if type(rule) == "number" then return rule, 0 end
  if type(rule) == "table" then return tonumber(rule.count) or -1, (tonumber(rule.age) or 0) * 1000 end
  return -1, 0
end

local function applyRemoveOnFail(parentId, parentKey, keepCount, keepAgeMs)
  if keepCount == 0 then
    rcall("ZREM", keys.failed, parentId)
    removeFlowJobKeys(parentKey)
  elseif keepCount > 0 or keepAgeMs > 0 then
    trimFinishedFlow(keys.failed, prefix, now, keepCount, keepAgeMs)
  end
end
for i = 4, #ARGV, 5 do
  local parentId, childKey, outcome, value, policy = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local parentKey = prefix .. parentId
  local code = 0
  if rcall("EXISTS", parentKey) == 0 then
    code = -1
  else
    local deps = parentKey .. ":dependencies"
    if rcall("SISMEMBER", deps, childKey) == 1 then
      code = 1
      local waiting = rcall("ZSCORE", keys.waitingChildren, parentId) ~= false
      if outcome == "completed" then
        rcall("SREM", deps, childKey)
        rcall("HDEL", parentKey .. ":unsuccessful", childKey)
        rcall("HSET", parentKey .. ":processed", childKey, value)
      elseif policy == "ignore" then
        rcall("SREM", deps, childKey)
        rcall("HSET", parentKey .. ":ignored", childKey, value)
      elseif policy == "remove" then
        -- Also a child removed after it failed with no policy (removeJob-14): it is no failure now.
        rcall("SREM", deps, childKey)
        rcall("HDEL", parentKey .. ":unsuccessful", childKey)
      else
        rcall("HSET", parentKey .. ":unsuccessful", childKey, value)
        if policy == "fail" or policy == "continue" then rcall("SREM", deps, childKey) end
        if waiting and policy == "fail" then
          local keepCount, keepAgeMs = keepRuleOf(parentKey)
          if failParent(keys, parentId, parentKey, childKey, value, now, maxEvents, keepCount) then noticed[#noticed + 1] = parentId end
          applyRemoveOnFail(parentId, parentKey, keepCount, keepAgeMs)
          waiting = false
        elseif policy == "fail" and rcall("HEXISTS", parentKey, "cfr") == 0 then
          -- A parent not waiting (running a step, or ready, delayed): marked, it fails when it is
          -- next taken, waits for children, or completes (the worker reads cfr then).
          rcall("HSET", parentKey, "cfr", "child " .. childKey .. " failed: " .. value)
        elseif waiting and policy == "continue" then
          startParent(keys, parentId, parentKey, now, maxEvents)
          waiting = false
        end
      end
      if waiting and rcall("SCARD", deps) == 0 then startParent(keys, parentId, parentKey, now, maxEvents) end
    end
  end
  codes[#codes + 1] = code
end
return { codes, noticed }
