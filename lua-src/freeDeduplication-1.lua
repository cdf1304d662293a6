--[[
  freeDeduplication-1 · delete a simple-mode deduplication key once its job has finished. Sent by a
  worker after the finish of a job added with a deduplication id and no ttl, because
  moveToFinished-14 (fixed) cannot delete it. Correctness does not depend on it (an add already
  reads that key as free: includes/deduplicationHolder.lua); without it the key would stay until an
  add with the same id reuses it.

  KEYS[1] the deduplication key P:{Q}:de:<id>
  ARGV[1] the finished job's id
  Returns 1 when it deleted the key; 0 when the key is gone, holds another job (a later add took
  the id), or has a TTL (an add with extend made it a throttle key: it expires by itself).
]]
local rcall = redis.call

if rcall("PTTL", KEYS[1]) ~= -1 or rcall("GET", KEYS[1]) ~= ARGV[1] then return 0 end
return rcall("DEL", KEYS[1])
