--[[
  obliterate-2 · delete the whole queue: every job and every key of the queue.

  KEYS[1] meta  [2] active
  ARGV[1] key prefix "P:{Q}:"  [2] "1" to force (delete even while jobs are active)
  Job schedulers (P:{Q}:repeat and each P:{Q}:repeat:<id>) go first, in the same budget. The
  worker registry's index (P:{Q}:workers) goes with the rest; its entries expire on their own, and
  a live worker writes its entry back at its next heartbeat. The metrics keys (recordMetrics-2) go
  too.
  Returns 1 when everything is gone, 0 when it deleted a batch of at most 1000 jobs and more are
      left (call again), -3 when jobs are active and force was not given (nothing deleted).
  Jobs go with their flow keys (removeFlowJobKeys), parents in waiting-children too; the queue's
  flow keys (waiting-children, flow-pending, notices, notice-data) go with the rest. Children in
  other queues are not told: a child of an obliterated parent settles into nothing (-1).
  A batch of 1000 keeps one call to about 2 ms (a script runs alone in Redis: 5000 took 10 to 30).
  The queue is paused first so no worker takes new jobs while the batches run.
]]
local rcall = redis.call
-- @include removeFlowJobKeys

local prefix = ARGV[1]
if ARGV[2] ~= "1" and rcall("LLEN", KEYS[2]) > 0 then return -3 end
rcall("HSET", KEYS[1], "paused", "1")

local budget = 1000
-- Job schedulers first (their hashes, within the same budget), so no step after a pickup makes a
-- new job while the batches run.
local schedulers = prefix .. "repeat"
while budget > 0 do
  local ids = rcall("ZRANGE", schedulers, 0, budget - 1)
  if #ids == 0 then break end
  for _, schedulerId in ipairs(ids) do rcall("DEL", prefix .. "repeat:" .. schedulerId) end
  rcall("ZREMRANGEBYRANK", schedulers, 0, #ids - 1)
  budget = budget - #ids
end
local function deleteJobsIn(name, isList)
  local key = prefix .. name
  while budget > 0 do
    local ids = isList and rcall("LRANGE", key, 0, budget - 1) or rcall("ZRANGE", key, 0, budget - 1)
    if #ids == 0 then return end
    for _, jobId in ipairs(ids) do removeFlowJobKeys(prefix .. jobId) end
    if isList then rcall("LTRIM", key, #ids, -1) else rcall("ZREMRANGEBYRANK", key, 0, #ids - 1) end
    budget = budget - #ids
  end
end
for _, name in ipairs({ "active", "wait", "paused" }) do deleteJobsIn(name, true) end
for _, name in ipairs({ "prioritized", "delayed", "completed", "failed", "waiting-children" }) do deleteJobsIn(name, false) end
if budget <= 0 then return 0 end

for _, name in ipairs({ "active", "wait", "paused", "prioritized", "delayed", "completed", "failed",
  "stalled", "stalled-check", "id", "pc", "marker", "limiter", "events", "repeat", "workers",
  "waiting-children", "flow-pending", "notices", "notice-data", "meta",
  "metrics:completed", "metrics:completed:data", "metrics:failed", "metrics:failed:data" }) do
  rcall("DEL", prefix .. name)
end
return 1
