--[[
  changePriority-8 · job.changePriority(): store a job's priority; a ready job moves to where that
  priority puts it.

  KEYS[1] wait  [2] paused  [3] meta  [4] prioritized  [5] pc  [6] marker  [7] delayed
      [8] the job's hash
  ARGV[1] jobId  [2] priority (0 = none, 1 highest, up to 2^21 - 1)  [3] lifo: "1" or "0"
  Returns 1, or -1 when the job does not exist (nothing written).
  A job in wait, paused or prioritized is taken out and placed again as an add places a job
  (pushReady): with priority 0 in wait (paused while the queue is paused), FIFO or, with lifo, to
  be taken next; with a priority in prioritized, scored priority * 2^32 + the pc counter, so it
  runs after the jobs already of that priority (lifo does not apply there, as in addJob-9). The
  marker is set unless the queue is paused. A job in any other state (delayed, active, finished)
  stays where it is: the stored priority places it when it is next made ready (its promotion, a
  retry, a reprocess). No job is refused for its state, as in BullMQ.
  Cost: a job found neither in prioritized nor in delayed nor locked (active) is looked for in wait,
  then paused, by LREM from the end taken first: it scans the list up to the job (all of it for a
  finished job).
  No event: the job stays as ready as it was (BullMQ has none either).
]]
local rcall = redis.call
-- @include pushReady

local jobId, jobKey = ARGV[1], KEYS[8]
if rcall("EXISTS", jobKey) == 0 then return -1 end
local ready = rcall("ZREM", KEYS[4], jobId) == 1
if not ready and not rcall("ZSCORE", KEYS[7], jobId) and rcall("EXISTS", jobKey .. ":lock") == 0 then
  ready = rcall("LREM", KEYS[1], "-1", jobId) == 1 or rcall("LREM", KEYS[2], "-1", jobId) == 1
end
rcall("HSET", jobKey, "priority", ARGV[2])
if ready then
  local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], prioritized = KEYS[4],
    pc = KEYS[5], marker = KEYS[6] }
  pushReady(keys, jobId, tonumber(ARGV[2]), ARGV[3] == "1")
end
return 1
