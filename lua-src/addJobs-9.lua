--[[
  addJobs-9 · add many jobs in one call (Queue.addBulk, and concurrent Queue.add calls gathered
  in one turn of the event loop): each exactly as addJob-9 would, with the paused check and the
  wake-up marker done once for the whole batch. Each job carries its own timestamp, so a delayed
  job is due exactly `delay` ms after its own add, wherever it stands in the batch.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] events max length
      [3] optional: the automatic id prefix, "<i>-" for partition i of a partitioned queue; a call
      has it when #ARGV mod 8 is 3 (a plain queue's call leaves it out: #ARGV mod 8 is 2)
      then 8 fields a job: custom id or "", name, data (JSON), opts (JSON), timestamp (ms),
      delay ms, priority, "1" for LIFO
  Returns a flat array, jobId, created, jobId, created, ... in the order given: created is 1 when
      added, 0 when a job with that custom id already existed (that job is left as it was).
]]
local rcall = redis.call
-- @include addOneJob

local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], id = KEYS[4], delayed = KEYS[5],
  prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[8], events = KEYS[9] }
local prefix, maxEvents, idPrefix, first = ARGV[1], ARGV[2], "", 3
if #ARGV % 8 == 3 then idPrefix, first = ARGV[3], 4 end
local paused = rcall("HEXISTS", keys.meta, "paused") == 1
local results, anyReady = {}, false
for i = first, #ARGV, 8 do
  local job = { id = ARGV[i], name = ARGV[i + 1], data = ARGV[i + 2], opts = ARGV[i + 3],
    delay = ARGV[i + 5], priority = ARGV[i + 6], lifo = ARGV[i + 7] == "1" }
  local jobId, created, ready = addOneJob(keys, prefix, job, ARGV[i + 4], maxEvents, paused, idPrefix)
  results[#results + 1] = jobId
  results[#results + 1] = created and 1 or 0
  anyReady = anyReady or ready
end
if anyReady and not paused then rcall("ZADD", keys.marker, "0", "0") end
return results
