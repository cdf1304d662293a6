--[[
  drain-5 · queue.drain(): remove every job that is waiting (wait, paused, prioritized) and, when
  asked, every delayed one. Active, completed and failed jobs stay.

  KEYS[1] wait  [2] paused  [3] prioritized  [4] delayed  [5] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] "1" to drain delayed jobs too  [3] events max length
  A removed job's flow keys go with it (removeFlowJobKeys), and a simple-mode deduplication key
  naming it (freeDeduplicationOf: no TTL). Its parent, in another queue, is not
  told (no script can reach its slot): docs/flows.md, "Removing jobs of a flow".
  Removes at most 1000 jobs a call, so one call stays short (a script runs alone in Redis: 5000
  took about 11 ms, 1000 take about 2); returns how many are left to remove (Queue.drain calls
  again while it is > 0).
]]
local rcall = redis.call
-- @include emitEvent
-- @include removeFlowJobKeys
-- @include freeDeduplication

local prefix, budget = ARGV[1], 1000
local function drainKey(key, isList)
  if budget <= 0 then return end
  local ids = isList and rcall("LRANGE", key, -budget, -1) or rcall("ZRANGE", key, 0, budget - 1)
  if #ids == 0 then return end
  for _, jobId in ipairs(ids) do
    freeDeduplicationOf(prefix .. jobId, jobId)
    removeFlowJobKeys(prefix .. jobId)
  end
  if isList then rcall("LTRIM", key, 0, -(#ids + 1)) else rcall("ZREMRANGEBYRANK", key, 0, #ids - 1) end
  budget = budget - #ids
end
drainKey(KEYS[1], true)
drainKey(KEYS[2], true)
drainKey(KEYS[3], false)
local withDelayed = ARGV[2] == "1"
if withDelayed then drainKey(KEYS[4], false) end
local left = rcall("LLEN", KEYS[1]) + rcall("LLEN", KEYS[2]) + rcall("ZCARD", KEYS[3])
if withDelayed then left = left + rcall("ZCARD", KEYS[4]) end
if left == 0 then emitEvent(KEYS[5], ARGV[3], "drained", "") end
return left
