--[[
  addJob-9 · add one job: ready (wait, or paused), prioritized, or delayed.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events
  ARGV[1] job-key prefix "P:{Q}:"   [2] custom job id, or "" for the next id counter value
      [3] name  [4] data (JSON)  [5] opts (JSON)  [6] now (ms)  [7] delay ms (0 = none)
      [8] priority (0 = none)   [9] "1" for LIFO   [10] events max length
  Returns { jobId, 1 } when added; { jobId, 0 } when a job with that custom id already exists:
      then nothing at all is written (the existing job is the answer).
]]
local rcall = redis.call
-- @include emitEvent
-- @include pushReady

local prefix, customId = ARGV[1], ARGV[2]
local jobId = customId
if customId == "" then
  jobId = tostring(rcall("INCR", KEYS[4]))
elseif rcall("EXISTS", prefix .. customId) == 1 then
  return { customId, 0 }
end

local now, delay, priority = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local maxEvents = tonumber(ARGV[10])
rcall("HSET", prefix .. jobId, "name", ARGV[3], "data", ARGV[4], "opts", ARGV[5],
  "timestamp", now, "delay", delay, "priority", priority)

if delay > 0 then
  local dueAt = now + delay
  rcall("ZADD", KEYS[5], dueAt, jobId)
  -- Wake one blocked worker so it shortens its block to this job's due time.
  rcall("ZADD", KEYS[8], dueAt, "1")
  emitEvent(KEYS[9], maxEvents, "delayed", jobId, "delay", dueAt)
else
  local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], prioritized = KEYS[6],
    pc = KEYS[7], marker = KEYS[8] }
  pushReady(keys, jobId, priority, ARGV[9] == "1")
  emitEvent(KEYS[9], maxEvents, "waiting", jobId)
end
return { jobId, 1 }
