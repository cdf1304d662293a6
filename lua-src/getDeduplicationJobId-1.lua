--[[
  getDeduplicationJobId-1 · Queue.getDeduplicationJobId: the job that holds a deduplication id, by
  the rule every add applies (includes/deduplicationHolder.lua), so a simple-mode id whose job has
  finished, or is gone, reads as free although its key is still there.

  KEYS[1] the deduplication key P:{Q}:de:<id>
  ARGV[1] job-key prefix "P:{Q}:"  [2] the deduplication id
  Returns the job id, or nil (false) when the id is free. Reads only.
]]
local rcall = redis.call
-- @include deduplicationHolder

return deduplicationHolder(KEYS[1], ARGV[1], ARGV[2])
