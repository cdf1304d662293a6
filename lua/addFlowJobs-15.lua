-- Generated from lua-src/addFlowJobs-15.lua by `npm run build:lua`: edit the source, not this file.
--[[
  addFlowJobs-15 · add jobs of a flow to one queue (FlowProducer; docs/protocol.md, "Flows"): a
  job with children waits in waiting-children with its dependencies and their creation specs
  (the intent, KEYS[11] flow-pending: parent id -> when written); a job without children is
  added as addJob-9 adds one. A child carries its parent link (parentKey, parent, pfp).
  Idempotent: a job that exists with the same parent link (a root: with none) is left as it is
  (a producer's retry, a flow added again with the same ids, or the sweep rolling a dead
  producer's intent forward: lib/runtime/flows/flow-recovery.ts, docs/protocol.md "Flows:
  recovery", which passes the intent's specs as they were written). Such a child that has already finished writes its notice again
  (KEYS[14], [15], from its hash and the set that holds it), as its finish did: its new parent
  hears of it, as the old one did.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events   [10] waiting-children   [11] flow-pending   [12] completed   [13] failed
      [14] notices   [15] notice-data
  ARGV[1] job-key prefix "P:{Q}:"   [2] events max length   [3] now (ms)
      then per job: id, name, data (JSON), opts (JSON), timestamp (ms), delay ms, priority,
      "1" for LIFO, parent job key ("" = none), parent (JSON { id, queueKey }, "" = none),
      policy on failure ("" none, "fail", "ignore", "remove", "continue"), n = its children,
      then n pairs: child job key, the child's creation spec (JSON, opaque here)
  Returns one code per job, in order: 1 added; 0 it existed with this parent link (unchanged);
      3 the same, finished: its notice written again; 2 it existed as another job (another
      parent link): unchanged, and not this flow's.
  Bounded work: the runtime sends at most 200 jobs and 1,000 children a call, one parent's
  children at most 10,000 (written 1,000 a command: Lua's unpack takes no more than ~8,000).
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
-- [lua-src/includes/addOneJob.lua]
-- addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix): the body of addJob-9 and addJobs-9.
-- keys: { wait, paused, meta, id, delayed, prioritized, pc, marker, events }.
-- job: { id = custom id or "", name, data, opts, delay, priority, lifo }: delay and priority are the
-- ARGV strings, written as they are (as is now, a string); they are compared as numbers.
-- idPrefix: put before an automatic id ("" for a plain queue; "3-" in partition 3 of a
-- partitioned queue, so its ids read 3-1, 3-2, ... and name their partition).
-- Returns jobId, created, ready: created is false when a job with that custom id exists (then
-- nothing at all is written); ready is true when the job went to wait or prioritized, so the
-- caller owes the wake-up marker (set once per call, however many jobs it added).
local function addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
  local jobId = job.id
  if jobId == "" then
    jobId = idPrefix .. rcall("INCR", keys.id)
  elseif rcall("EXISTS", prefix .. jobId) == 1 then
    return jobId, false, false
  end
  rcall("HSET", prefix .. jobId, "name", job.name, "data", job.data, "opts", job.opts,
    "timestamp", now, "delay", job.delay, "priority", job.priority)
  local delay = tonumber(job.delay)
  if delay > 0 then
    local dueAt = tonumber(now) + delay
    rcall("ZADD", keys.delayed, dueAt, jobId)
    -- Wake one blocked worker so it shortens its block to this job's due time.
    rcall("ZADD", keys.marker, dueAt, "1")
    emitEvent(keys.events, maxEvents, "delayed", jobId, "delay", dueAt)
    return jobId, true, false
  end
  placeReady(keys, jobId, tonumber(job.priority), job.lifo, paused)
  emitEvent(keys.events, maxEvents, "waiting", jobId)
  return jobId, true, true
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

local CHUNK = 1000
local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], id = KEYS[4], delayed = KEYS[5],
  prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[8], events = KEYS[9] }
local waitingChildren, flowPending, completed, failed = KEYS[10], KEYS[11], KEYS[12], KEYS[13]
local noticeKeys = { notices = KEYS[14], noticeData = KEYS[15] }
local prefix, maxEvents, now = ARGV[1], ARGV[2], ARGV[3]
local paused = rcall("HEXISTS", keys.meta, "paused") == 1
local codes, anyReady = {}, false

-- An existing job with this parent link: unchanged; when it has finished, its notice again.
local function existing(id, jobKey, parentKey)
  local stored = rcall("HMGET", jobKey, "parentKey", "pfp", "returnvalue", "failedReason")
  if (stored[1] or "") ~= parentKey then return 2 end
  if parentKey == "" then return 0 end
  if rcall("ZSCORE", completed, id) then
    writeNotice(noticeKeys, id, parentKey, "completed", stored[3] or "null", stored[2] or "", now)
    return 3
  elseif rcall("ZSCORE", failed, id) then
    writeNotice(noticeKeys, id, parentKey, "failed", stored[4] or "", stored[2] or "", now)
    return 3
  end
  return 0
end

local i = 4
while i <= #ARGV do
  local id, parentKey, parentJson, policy = ARGV[i], ARGV[i + 8], ARGV[i + 9], ARGV[i + 10]
  local children = tonumber(ARGV[i + 11])
  local first, last = i + 12, i + 11 + 2 * children
  local jobKey = prefix .. id
  if rcall("EXISTS", jobKey) == 1 then
    codes[#codes + 1] = existing(id, jobKey, parentKey)
  else
    codes[#codes + 1] = 1
    local timestamp = ARGV[i + 4]
    if children > 0 then
      rcall("HSET", jobKey, "name", ARGV[i + 1], "data", ARGV[i + 2], "opts", ARGV[i + 3], "timestamp", timestamp,
        "delay", ARGV[i + 5], "priority", ARGV[i + 6], "fch", "1")
      if ARGV[i + 7] == "1" then rcall("HSET", jobKey, "lifo", "1") end
      for from = first, last, 2 * CHUNK do
        local to = math.min(last, from + 2 * CHUNK - 1)
        local childKeys, pending = {}, {}
        for c = from, to, 2 do
          childKeys[#childKeys + 1] = ARGV[c]
          pending[#pending + 1] = ARGV[c]
          pending[#pending + 1] = ARGV[c + 1]
        end
        rcall("SADD", jobKey .. ":dependencies", unpack(childKeys))
        rcall("HSET", jobKey .. ":pending", unpack(pending))
      end
      rcall("ZADD", flowPending, now, id)
      rcall("ZADD", waitingChildren, timestamp, id)
      emitEvent(keys.events, maxEvents, "waiting-children", id)
    else
      local job = { id = id, name = ARGV[i + 1], data = ARGV[i + 2], opts = ARGV[i + 3], delay = ARGV[i + 5],
        priority = ARGV[i + 6], lifo = ARGV[i + 7] == "1" }
      local _, _, ready = addOneJob(keys, prefix, job, timestamp, maxEvents, paused, "")
      anyReady = anyReady or ready
    end
    if parentKey ~= "" then rcall("HSET", jobKey, "parentKey", parentKey, "parent", parentJson, "pfp", policy) end
  end
  i = last + 1
end
if anyReady and not paused then rcall("ZADD", keys.marker, "0", "0") end
return codes
