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
-- @include emitEvent
-- @include flowParent
-- @include removeFlowJobKeys
-- @include freeDeduplication
-- @include trimFinishedFlow

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
