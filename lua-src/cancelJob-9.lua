--[[
  cancelJob-9 · queue.cancelJob(): a job still to run fails at once as cancelled, without another
  attempt; a job a worker holds (or held: in active) is marked for its worker.

  KEYS[1] wait  [2] paused  [3] active  [4] prioritized  [5] delayed  [6] failed  [7] meta
      [8] events  [9] the job's hash
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
       1 it was waiting, paused, prioritized or delayed: taken out, and failed as a finish without
         retry would (finishedOn = now, failedReason "job <id> was cancelled" or "job <id> was
         cancelled: <reason>", `cxl` = the reason; atm, stacktrace and the rest kept: no attempt
         ran), event `failed` (failedReason); then kept in failed, or removed, by the keep rule
         (removeOnFail, as moveToFinished-14 applies it: trimFinished, at most 1000 jobs deleted).
         A simple-mode deduplication id the job holds (`deid`, its key without a TTL naming the job)
         has its key deleted, as freeDeduplication-1 deletes it after a finish; a key with a TTL stays.
      -3 none of these (a job hash in no state): nothing written.
  Cost: ZREM prioritized and delayed first; then LPOS active (active holds the jobs running and
  stalled: at most the workers' concurrency); then LREM wait and paused from the end workers take
  (-1), each scanning its list up to the job (all of it when the job is not there).
]]
local rcall = redis.call
-- @include emitEvent
-- @include removeJobKeys
-- @include trimFinished

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
if not found then
  if rcall("LPOS", KEYS[3], jobId) then return mark() end
  found = rcall("LREM", KEYS[1], "-1", jobId) == 1 or rcall("LREM", KEYS[2], "-1", jobId) == 1
end
if not found then return -3 end

local failedReason = "job " .. jobId .. " was cancelled"
if reason ~= "" then failedReason = failedReason .. ": " .. reason end
rcall("HSET", jobKey, "finishedOn", now, "failedReason", failedReason, "cxl", reason)
emitEvent(KEYS[8], ARGV[6], "failed", jobId, "failedReason", failedReason)

local deid = rcall("HGET", jobKey, "deid")
if deid then
  local dedupKey = prefix .. "de:" .. deid
  if rcall("PTTL", dedupKey) == -1 and rcall("GET", dedupKey) == jobId then rcall("DEL", dedupKey) end
end

local keepCount, keepAgeMs = tonumber(ARGV[4]), tonumber(ARGV[5])
if keepCount == 0 then
  removeJobKeys(jobKey)
else
  rcall("ZADD", KEYS[6], now, jobId)
  if keepCount > 0 or keepAgeMs > 0 then trimFinished(KEYS[6], prefix, now, keepCount, keepAgeMs) end
end
return 1
