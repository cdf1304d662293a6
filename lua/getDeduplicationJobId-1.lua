-- Generated from lua-src/getDeduplicationJobId-1.lua by `npm run build:lua`: edit the source, not this file.
--[[
  getDeduplicationJobId-1 · Queue.getDeduplicationJobId: the job that holds a deduplication id, by
  the rule every add applies (includes/deduplicationHolder.lua), so a simple-mode id whose job has
  finished, or is gone, reads as free although its key is still there.

  KEYS[1] the deduplication key P:{Q}:de:<id>
  ARGV[1] job-key prefix "P:{Q}:"  [2] the deduplication id
  Returns the job id, or nil (false) when the id is free. Reads only.
]]
local rcall = redis.call
-- [lua-src/includes/deduplicationHolder.lua]
-- deduplicationHolder(dedupKey, prefix, dedupId): the id of the job that holds deduplication id
-- dedupId (its key P:{Q}:de:<dedupId>, a string holding that job's id), or false when it is free.
-- No script deletes the key when its job finishes (moveToFinished-14 is fixed), so whether it still
-- holds is read from the key and the job alone, here, by every script that asks:
--   * a key with a TTL (an add with a ttl: throttle and debounce) holds until it expires, whatever
--     became of its job;
--   * a key without one (simple mode) holds while its job is there and has not finished: the job's
--     hash has deid = dedupId and no finishedOn (set by every finish, completed or final failure,
--     a stalled-out failure included; cleared by reprocessJob-9). deid also makes a recycled job id
--     (a custom id used again, or automatic ids that restart after an obliterate) hold nothing.
local function deduplicationHolder(dedupKey, prefix, dedupId)
  local ttl = rcall("PTTL", dedupKey)
  if ttl == -2 then return false end
  local holder = rcall("GET", dedupKey)
  if ttl >= 0 then return holder end
  local job = rcall("HMGET", prefix .. holder, "deid", "finishedOn")
  if job[1] == dedupId and not job[2] then return holder end
  return false
end

return deduplicationHolder(KEYS[1], ARGV[1], ARGV[2])
