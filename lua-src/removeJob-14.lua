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
-- @include emitEvent
-- @include removeFlowJobKeys
-- @include freeDeduplication
-- @include readNotice

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
