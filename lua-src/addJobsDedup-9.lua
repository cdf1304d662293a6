--[[
  addJobsDedup-9 · addJobs-9 for a batch in which at least one job has a deduplication id: each job
  exactly as addJob-9 would add it with the same fields (docs/deduplication.md), in order, with the
  paused check and the wake-up marker done once for the whole batch.
  Why a script of its own and not optional fields of addJobs-9: addJobs-9 tells its optional header
  field by #ARGV mod 8, which per-job optional fields would break, and a batch of plain jobs (every
  batch, unless a job of it has a deduplication id) then goes as addJobs-9, byte for byte as before.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] events max length
      [3] the automatic id prefix: "" for a plain queue, "<i>-" for partition i (always present)
      then 12 fields a job: custom id or "", name, data (JSON), opts (JSON), timestamp (ms),
      delay ms, priority, "1" for LIFO, deduplication id or "" (none), its ttl ms ("0" = none),
      "1" for extend, "1" for replace
  Returns a flat array, jobId, outcome, jobId, outcome, ... in the order given, outcome as addJob-9's:
      1 added, 0 a job with that custom id existed, 2 deduplicated (jobId: the job that holds the id).
      Two jobs of one batch with one deduplication id: the first is added, the second deduplicated.
]]
local rcall = redis.call
-- @include addDeduplicatedJob

local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], id = KEYS[4], delayed = KEYS[5],
  prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[8], events = KEYS[9] }
local prefix, maxEvents, idPrefix = ARGV[1], ARGV[2], ARGV[3]
local paused = rcall("HEXISTS", keys.meta, "paused") == 1
local results, anyReady = {}, false
for i = 4, #ARGV, 12 do
  local job = { id = ARGV[i], name = ARGV[i + 1], data = ARGV[i + 2], opts = ARGV[i + 3],
    delay = ARGV[i + 5], priority = ARGV[i + 6], lifo = ARGV[i + 7] == "1" }
  local dedupId = ARGV[i + 8]
  if dedupId ~= "" then
    job.dedup = { id = dedupId, key = prefix .. "de:" .. dedupId, ttl = ARGV[i + 9], extend = ARGV[i + 10] == "1",
      replace = ARGV[i + 11] == "1" }
  end
  local jobId, outcome, ready = addDeduplicatedJob(keys, prefix, job, ARGV[i + 4], maxEvents, paused, idPrefix)
  results[#results + 1] = jobId
  results[#results + 1] = outcome
  anyReady = anyReady or ready
end
if anyReady and not paused then rcall("ZADD", keys.marker, "0", "0") end
return results
