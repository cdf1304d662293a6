-- Generated from lua-src/cancelJob-9.lua by `npm run build:lua`: edit the source, not this file.
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
-- [lua-src/includes/trimFinished.lua]
-- trimFinished(setKey, prefix, now, keepCount, keepAgeMs): the removeOnComplete / removeOnFail rule,
-- run after a finished job was added to setKey. keepCount < 0 keeps every job; otherwise only the
-- newest keepCount stay. keepAgeMs > 0 also drops jobs that finished more than keepAgeMs ago.
-- The two common rules never come here (finishJob): keep all costs one deferred ZADD, remove
-- now one DEL.
-- Bounded work: one script call deletes at most TRIM_BUDGET jobs, over all its trims (the
-- finishes of a finishJobs-13 batch share it). A script runs alone in Redis, and deleting a
-- whole backlog at once (removeOnComplete lowered from keep-all to a count on a set of 200,000
-- jobs: about a second) would stall every worker's heartbeat. Such a backlog shrinks instead over
-- the following finishes, by up to TRIM_BUDGET - 1 a finish; the set holds more than the rule
-- says until then. In the steady state (one job over the count per finish) the count rule costs
-- what it did: one ZCARD, one ZPOPMIN, one DEL.
-- now is the ARGV string; the age cut-off is arithmetic, so that one is a Lua number.
local TRIM_BUDGET = 1000
local trimBudget = TRIM_BUDGET -- left in this script call (a script's body runs afresh each call)
local function trimFinished(setKey, prefix, now, keepCount, keepAgeMs)
  if trimBudget <= 0 then return end
  local doomed = {}
  if keepAgeMs > 0 then
    doomed = rcall("ZRANGEBYSCORE", setKey, "0", tonumber(now) - keepAgeMs, "LIMIT", "0", trimBudget)
    if #doomed > 0 then rcall("ZREM", setKey, unpack(doomed)) end
  end
  if keepCount >= 0 then
    -- The oldest first, as ranks go: ZPOPMIN takes them out and names them in one command.
    local extra = math.min(rcall("ZCARD", setKey) - keepCount, trimBudget - #doomed)
    if extra > 0 then
      local popped = rcall("ZPOPMIN", setKey, extra)
      for i = 1, #popped, 2 do doomed[#doomed + 1] = popped[i] end
    end
  end
  trimBudget = trimBudget - #doomed
  for _, jobId in ipairs(doomed) do removeJobKeys(prefix .. jobId) end
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
