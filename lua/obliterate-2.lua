-- Generated from lua-src/obliterate-2.lua by `npm run build:lua`: edit the source, not this file.
--[[
  obliterate-2 · delete the whole queue: every job and every key of the queue.

  KEYS[1] meta  [2] active
  ARGV[1] key prefix "P:{Q}:"  [2] "1" to force (delete even while jobs are active)
  Job schedulers (P:{Q}:repeat and each P:{Q}:repeat:<id>) go first, in the same budget. The
  worker registry's index (P:{Q}:workers) goes with the rest; its entries expire on their own, and
  a live worker writes its entry back at its next heartbeat. The metrics keys (recordMetrics-2) go
  too.
  Returns 1 when everything is gone, 0 when it deleted a batch of at most 1000 jobs and more are
      left (call again), -3 when jobs are active and force was not given (nothing deleted).
  Jobs go with their flow keys (removeFlowJobKeys), parents in waiting-children too; the queue's
  flow keys (waiting-children, flow-pending, notices, notice-data) go with the rest. Children in
  other queues are not told: a child of an obliterated parent settles into nothing (-1).
  A batch of 1000 keeps one call to about 2 ms (a script runs alone in Redis: 5000 took 10 to 30).
  The queue is paused first so no worker takes new jobs while the batches run.
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

local prefix = ARGV[1]
if ARGV[2] ~= "1" and rcall("LLEN", KEYS[2]) > 0 then return -3 end
rcall("HSET", KEYS[1], "paused", "1")

local budget = 1000
-- Job schedulers first (their hashes, within the same budget), so no step after a pickup makes a
-- new job while the batches run.
local schedulers = prefix .. "repeat"
while budget > 0 do
  local ids = rcall("ZRANGE", schedulers, 0, budget - 1)
  if #ids == 0 then break end
  for _, schedulerId in ipairs(ids) do rcall("DEL", prefix .. "repeat:" .. schedulerId) end
  rcall("ZREMRANGEBYRANK", schedulers, 0, #ids - 1)
  budget = budget - #ids
end
local function deleteJobsIn(name, isList)
  local key = prefix .. name
  while budget > 0 do
    local ids = isList and rcall("LRANGE", key, 0, budget - 1) or rcall("ZRANGE", key, 0, budget - 1)
    if #ids == 0 then return end
    for _, jobId in ipairs(ids) do removeFlowJobKeys(prefix .. jobId) end
    if isList then rcall("LTRIM", key, #ids, -1) else rcall("ZREMRANGEBYRANK", key, 0, #ids - 1) end
    budget = budget - #ids
  end
end
for _, name in ipairs({ "active", "wait", "paused" }) do deleteJobsIn(name, true) end
for _, name in ipairs({ "prioritized", "delayed", "completed", "failed", "waiting-children" }) do deleteJobsIn(name, false) end
if budget <= 0 then return 0 end

for _, name in ipairs({ "active", "wait", "paused", "prioritized", "delayed", "completed", "failed",
  "stalled", "stalled-check", "id", "pc", "marker", "limiter", "events", "repeat", "workers",
  "waiting-children", "flow-pending", "notices", "notice-data", "meta",
  "metrics:completed", "metrics:completed:data", "metrics:failed", "metrics:failed:data" }) do
  rcall("DEL", prefix .. name)
end
return 1
