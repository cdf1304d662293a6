-- Generated from lua-src/extendLocks-1.lua by `npm run build:lua`: edit the source, not this file.
--[[
  extendLocks-1 · the batch heartbeat: extendLock-2's compare-and-set for many jobs in one call.

  KEYS[1] stalled
  ARGV[1] job-key prefix "P:{Q}:"   [2] lock duration ms   [3..] jobId, token, jobId, token, ...
  Returns a flat array of the failures, jobId, code, jobId, code, ...: code -2 when the job has no
      lock (it lapsed), -6 when another token holds it. An empty array: every lock was renewed.
]]
local rcall = redis.call
local prefix, duration = ARGV[1], ARGV[2]
local failures = {}
for i = 3, #ARGV, 2 do
  local jobId, token = ARGV[i], ARGV[i + 1]
  local lockKey = prefix .. jobId .. ":lock"
  local holder = rcall("GET", lockKey)
  if holder == token then
    rcall("SET", lockKey, token, "PX", duration)
    rcall("SREM", KEYS[1], jobId)
  else
    failures[#failures + 1] = jobId
    failures[#failures + 1] = holder and -6 or -2
  end
end
return failures
