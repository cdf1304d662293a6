--[[
  addJob-9 · add one job: ready (wait, or paused), prioritized, or delayed.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events
  ARGV[1] job-key prefix "P:{Q}:"   [2] custom job id, or "" for the next id counter value
      [3] name  [4] data (JSON)  [5] opts (JSON)  [6] now (ms)  [7] delay ms (0 = none)
      [8] priority (0 = none)   [9] "1" for LIFO   [10] events max length
      [11] automatic id prefix (optional; "" or absent for a plain queue, "<i>-" for partition i)
  Returns { jobId, 1 } when added; { jobId, 0 } when a job with that custom id already exists:
      then nothing at all is written (the existing job is the answer).
]]
local rcall = redis.call
-- @include addOneJob

local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], id = KEYS[4], delayed = KEYS[5],
  prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[8], events = KEYS[9] }
local job = { id = ARGV[2], name = ARGV[3], data = ARGV[4], opts = ARGV[5], delay = ARGV[7],
  priority = ARGV[8], lifo = ARGV[9] == "1" }
local paused = rcall("HEXISTS", keys.meta, "paused") == 1
local jobId, created, ready = addOneJob(keys, ARGV[1], job, ARGV[6], ARGV[10], paused, ARGV[11] or "")
if ready and not paused then rcall("ZADD", keys.marker, "0", "0") end
return { jobId, created and 1 or 0 }
