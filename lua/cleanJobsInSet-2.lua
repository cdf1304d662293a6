--[[
  cleanJobsInSet-2 · queue.clean(): remove up to a limit of jobs older than a grace period from one
  state (a list: wait, paused, active; or a zset: prioritized, delayed, completed, failed).

  KEYS[1] the state's key  [2] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] cut-off timestamp ms: jobs at or before it go
      [3] limit (0 = no limit)  [4] events max length
  Age is finishedOn for finished jobs and timestamp (creation) for the others. Jobs whose lock is
  held are never removed. Returns the removed ids.
]]
local rcall = redis.call
-- @include emitEvent
-- @include removeJobKeys

local setKey, prefix, cutoff, limit = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local isList = rcall("TYPE", setKey)["ok"] == "list"
local ids = isList and rcall("LRANGE", setKey, 0, -1) or rcall("ZRANGE", setKey, 0, -1)
local removed = {}
for _, jobId in ipairs(ids) do
  if limit > 0 and #removed >= limit then break end
  local jobKey = prefix .. jobId
  local stamps = rcall("HMGET", jobKey, "finishedOn", "timestamp")
  local at = tonumber(stamps[1]) or tonumber(stamps[2]) or 0
  if at <= cutoff and rcall("EXISTS", jobKey .. ":lock") == 0 then
    if isList then rcall("LREM", setKey, 0, jobId) else rcall("ZREM", setKey, jobId) end
    removeJobKeys(jobKey)
    removed[#removed + 1] = jobId
  end
end
if #removed > 0 then emitEvent(KEYS[2], tonumber(ARGV[4]), "cleaned", "", "count", #removed) end
return removed
