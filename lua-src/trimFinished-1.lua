--[[
  trimFinished-1 · one bounded step of a keep rule (removeOnComplete / removeOnFail given as a
  count or an age) on a finished set. Each finish trims by its own job's rule, at most 1000 jobs a
  call (trimFinished, inlined in the fixed moveToFinished-14; trimFinishedFlow in the batch
  finishes): a rule lowered on a set far over it would only hold as more jobs finish, and never on
  an idle queue. A worker calls this in the stalled sweep's rhythm, with the last rule its
  finishes used on the set, again while it answers more than 0 (docs/protocol.md, "Keep rules").

  KEYS[1] the finished set (completed or failed)
  ARGV[1] job-key prefix "P:{Q}:"  [2] keep count (-1 = no count rule)  [3] keep age ms (0 = none)
      [4] now (ms)
  Deletes at most 1000 jobs, the oldest first, each with its logs, its lock and its flow keys
  (trimFinishedFlow). Returns how many jobs are still over the rule after the call (0: it holds).
]]
local rcall = redis.call
-- @include trimFinishedFlow

local prefix, keepCount, keepAgeMs, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
trimFinishedFlow(KEYS[1], prefix, now, keepCount, keepAgeMs)
local over = 0
if keepCount >= 0 then over = math.max(rcall("ZCARD", KEYS[1]) - keepCount, 0) end
if keepAgeMs > 0 then over = math.max(over, rcall("ZCOUNT", KEYS[1], "0", tonumber(now) - keepAgeMs)) end
return over
