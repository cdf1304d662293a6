--[[
  removeOrphanedJobs-8 · one batch of queue.removeOrphanedJobs(): of the candidate ids, the job
  hashes that no state structure holds are deleted (an orphan: left by a crash of another runtime
  between two writes, or by hand). The runtime finds the candidates with SCAN and sends at most
  100 a call.

  KEYS[1] wait  [2] paused  [3] active  [4] prioritized  [5] delayed  [6] completed  [7] failed
      [8] waiting-children
  ARGV[1] job-key prefix "P:{Q}:"  [2..] candidate job ids
  A candidate counts only when its key is a job hash (a hash with `data` and `timestamp`), no lock
  exists for it, and it is in none of the eight structures: ZSCORE for the zsets; LPOS for the
  lists, each looked at from both ends, 1,000 entries each way; a list longer than 2,000 is not
  searched at all (its job is kept, never judged), so a call compares at most 100 x 3 x 2,000
  entries. An orphan goes with its logs, lock, flow keys and
  a simple-mode deduplication key naming it. Nothing else is written (no event: no state knew it).
  Returns how many were deleted.
]]
local rcall = redis.call
-- @include removeFlowJobKeys
-- @include freeDeduplication

local LIST_SCAN = 1000
local ZSETS = { KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] }
local prefix = ARGV[1]
local function inList(key, jobId)
  if rcall("LLEN", key) > 2 * LIST_SCAN then return true end -- too long to search: the job is kept
  return rcall("LPOS", key, jobId, "MAXLEN", LIST_SCAN) or rcall("LPOS", key, jobId, "RANK", -1, "MAXLEN", LIST_SCAN)
end

local removed = 0
for i = 2, #ARGV do
  local jobId = ARGV[i]
  local jobKey = prefix .. jobId
  local fields = rcall("TYPE", jobKey).ok == "hash" and rcall("HMGET", jobKey, "data", "timestamp") or {}
  if fields[1] and fields[2] and rcall("EXISTS", jobKey .. ":lock") == 0 then
    local held = false
    for _, key in ipairs(ZSETS) do
      if rcall("ZSCORE", key, jobId) then held = true break end
    end
    if not held then held = inList(KEYS[3], jobId) or inList(KEYS[1], jobId) or inList(KEYS[2], jobId) end
    if not held then
      freeDeduplicationOf(jobKey, jobId)
      removeFlowJobKeys(jobKey)
      removed = removed + 1
    end
  end
end
return removed
