-- Generated from lua-src/obliterate-2.lua by `npm run build:lua`: edit the source, not this file.
--[[
  obliterate-2 · delete the whole queue: every job and every key of the queue.

  KEYS[1] meta  [2] active
  ARGV[1] key prefix "P:{Q}:"  [2] "1" to force (delete even while jobs are active)
  Returns 1 when everything is gone, 0 when it deleted a batch of at most 1000 jobs and more are
      left (call again), -3 when jobs are active and force was not given (nothing deleted).
  A batch of 1000 keeps one call to about 2 ms (a script runs alone in Redis: 5000 took 10 to 30).
  The queue is paused first so no worker takes new jobs while the batches run.
]]
local rcall = redis.call
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
end

local prefix = ARGV[1]
if ARGV[2] ~= "1" and rcall("LLEN", KEYS[2]) > 0 then return -3 end
rcall("HSET", KEYS[1], "paused", "1")

local budget = 1000
local function deleteJobsIn(name, isList)
  local key = prefix .. name
  while budget > 0 do
    local ids = isList and rcall("LRANGE", key, 0, budget - 1) or rcall("ZRANGE", key, 0, budget - 1)
    if #ids == 0 then return end
    for _, jobId in ipairs(ids) do removeJobKeys(prefix .. jobId) end
    if isList then rcall("LTRIM", key, #ids, -1) else rcall("ZREMRANGEBYRANK", key, 0, #ids - 1) end
    budget = budget - #ids
  end
end
for _, name in ipairs({ "active", "wait", "paused" }) do deleteJobsIn(name, true) end
for _, name in ipairs({ "prioritized", "delayed", "completed", "failed" }) do deleteJobsIn(name, false) end
if budget <= 0 then return 0 end

for _, name in ipairs({ "active", "wait", "paused", "prioritized", "delayed", "completed", "failed",
  "stalled", "stalled-check", "id", "pc", "marker", "limiter", "events", "meta" }) do
  rcall("DEL", prefix .. name)
end
return 1
