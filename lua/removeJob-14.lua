-- Generated from lua-src/removeJob-14.lua by `npm run build:lua`: edit the source, not this file.
--[[
  removeJob-14 · remove one job from whatever state it is in (waiting-children too), unless a
  worker holds its lock, with its flow keys (docs/flows.md, "Removing jobs of a flow").
  A child of a flow leaves a notice for its parent (outcome failed, policy remove: the parent
  drops the dependency and starts if it was its last), as a finish does: the parent lives in
  another slot, so the runtime settles it next (settleChildren-12) and deletes the notice, and a
  sweep delivers a notice a dead runtime left. A notice the child's finish left for this parent
  and not delivered yet is kept instead, so the parent hears what it would have: a completion
  (its value), or a failure with a policy (fail: the parent fails; ignore, continue, remove: as
  the policy says). Only a failure with no policy is replaced: the parent would wait for a child
  that is gone. A parent answers its unsettled children (its dependencies and the children its
  intent still holds) for the runtime to remove in their own slots, after this call.
  A notice is read with readNotice (pcall'd decode), and everything is read before the first
  write, so no data can raise an error half-way through.

  KEYS[1] wait  [2] paused  [3] active  [4] prioritized  [5] delayed  [6] completed  [7] failed
      [8] stalled  [9] events  [10] the job's hash  [11] waiting-children  [12] flow-pending
      [13] notices  [14] notice-data
  ARGV[1] jobId  [2] events max length  [3] "1" to answer the job's unsettled children
      [4] "1" to leave a notice for the job's parent ("0" when the parent is being removed too:
      then a notice the job left is deleted)   [5] now (ms)
      [6] optional: the job key of the parent the caller expects the job to have ("" or absent:
      any). A caller that read the job as a child earlier (the children of a removed parent)
      removes it only while it is still that parent's child.
  Returns { 1, notice JSON or "", child job keys... } when removed (the notice is the one now in
      KEYS[13]/[14], for the runtime to deliver), { 0 } when a worker holds its lock (nothing
      changed), { 2 } when ARGV[6] is given and the job's parentKey is not it (nothing changed: it
      is another parent's child, or no child, now), { -1 } when the job does not exist.
  Bounded: a parent has at most MAX_CHILDREN (10,000) unsettled children (addDependency-4 and the
  FlowProducer keep to it), answered by one SMEMBERS and one HKEYS. Its settled children have no
  bound (`:processed` of a step job grows round after round): the flow keys go with UNLINK
  (removeFlowJobKeys), which frees a big key's memory in a background thread, so this call's own
  work does not grow with them. The job's hash and logs go with DEL (removeJobKeys, shared with
  the fixed moveToFinished-14). A simple-mode deduplication key naming the job (no TTL) goes too
  (freeDeduplicationOf); a throttle key stays until its TTL ends.
  Notices are keyed by child id: a notice still waiting for an earlier parent of a job of the
  same id (that child removed and the id added again under this parent) is replaced by this
  removal's; the earlier parent's backstop then lets that child go as removed (docs/flows.md,
  "One notice per child id").
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
-- [lua-src/includes/readNotice.lua]
-- readNotice(stored): a notice of notice-data (JSON [parentKey, outcome, value, policy]) as
-- { parentKey, outcome, value, policy }, or nil when it is none: not JSON (decoded under pcall, so
-- bad data never raises mid-script), not an array, a parentKey that is not a non-empty string, an
-- outcome other than "completed" and "failed", a value or policy that is neither a string nor
-- JSON null (another runtime's null reads as ""; a field left out is missing, not ""), or a policy
-- none of "", fail, ignore, remove, continue. The runtimes read notices by the same rule (the Node
-- runtime's parseNotice): a notice that is none cannot be delivered, and is deleted. Their JSON
-- parsers still differ at the edges (cjson takes NaN, Infinity, hex; JSON.parse a lone \ud800
-- escape), so what a runtime read is deleted by its bytes (ackNotices-2), not by this rule.
local NOTICE_POLICIES = { [""] = true, fail = true, ignore = true, remove = true, continue = true }
local function readNotice(stored)
  local ok, notice = pcall(cjson.decode, stored)
  if not ok or type(notice) ~= "table" then return nil end
  local parentKey, outcome, value, policy = notice[1], notice[2], notice[3], notice[4]
  if value == cjson.null then value = "" end
  if policy == cjson.null then policy = "" end
  if type(parentKey) ~= "string" or parentKey == "" or (outcome ~= "completed" and outcome ~= "failed")
      or type(value) ~= "string" or type(policy) ~= "string" or not NOTICE_POLICIES[policy] then
    return nil
  end
  return { parentKey = parentKey, outcome = outcome, value = value, policy = policy }
end

local jobId, jobKey = ARGV[1], KEYS[10]
if rcall("EXISTS", jobKey) == 0 then return { -1 } end
if rcall("EXISTS", jobKey .. ":lock") == 1 then return { 0 } end
local link = rcall("HMGET", jobKey, "parentKey", "pfp")
local expectedParent = ARGV[6] or ""
if expectedParent ~= "" and link[1] ~= expectedParent then return { 2 } end
local reply = { 1, "" }
if ARGV[3] == "1" then
  local seen = {}
  for _, childKey in ipairs(rcall("SMEMBERS", jobKey .. ":dependencies")) do
    seen[childKey] = true
    reply[#reply + 1] = childKey
  end
  for _, childKey in ipairs(rcall("HKEYS", jobKey .. ":pending")) do
    if not seen[childKey] then reply[#reply + 1] = childKey end
  end
end
local notices, noticeData = KEYS[13], KEYS[14]
if link[1] and ARGV[4] == "1" then
  local stored = rcall("HGET", noticeData, jobId)
  local pending = stored and readNotice(stored)
  if pending and pending.parentKey == link[1] and (pending.outcome == "completed" or pending.policy ~= "") then
    reply[2] = stored
  else
    reply[2] = cjson.encode({ link[1], "failed", "removed", "remove" })
    rcall("ZADD", notices, ARGV[5], jobId)
    rcall("HSET", noticeData, jobId, reply[2])
  end
else
  rcall("ZREM", notices, jobId)
  rcall("HDEL", noticeData, jobId)
end
for i = 1, 3 do rcall("LREM", KEYS[i], "0", jobId) end
for i = 4, 7 do rcall("ZREM", KEYS[i], jobId) end
rcall("ZREM", KEYS[11], jobId)
rcall("ZREM", KEYS[12], jobId)
rcall("SREM", KEYS[8], jobId)
freeDeduplicationOf(jobKey, jobId)
removeFlowJobKeys(jobKey)
emitEvent(KEYS[9], ARGV[2], "removed", jobId)
return reply
