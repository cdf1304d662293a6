-- freeDeduplicationOf(jobKey, jobId): a job that goes (removed, drained, cleaned, cancelled) frees
-- the simple-mode deduplication id it holds: its `deid`'s key is deleted while it has no TTL and
-- still names the job, as freeDeduplication-1 does after a finish. Left, it would stay for ever,
-- naming a job that is gone. A key with a TTL (throttle mode) stays until it expires: its window
-- is the point. Call it before the job's hash is deleted.
local function freeDeduplicationOf(jobKey, jobId)
  local deid = rcall("HGET", jobKey, "deid")
  if not deid then return end
  local dedupKey = string.sub(jobKey, 1, #jobKey - #jobId) .. "de:" .. deid
  if rcall("PTTL", dedupKey) == -1 and rcall("GET", dedupKey) == jobId then rcall("DEL", dedupKey) end
end
