-- releaseUncounted(jobKey, lockKey, activeKey, stalledKey, jobId, token): the checks of
-- releaseFromActive, in its order and before any write, and its release (the lock DELeted, the id
-- SREMed from stalled), but without counting the attempt (atm): for the moves that give a job up
-- with its attempt unused (moveToDelayed-7, moveJobFromActiveToWait-11). releaseFromActive itself
-- is part of the fixed moveToFinished-14 and cannot take a flag.
-- Returns 0 when it released the job, else the code (-1, -2, -6, -3) and nothing changed.
local function releaseUncounted(jobKey, lockKey, activeKey, stalledKey, jobId, token)
  if rcall("EXISTS", jobKey) == 0 then return -1 end
  local holder = rcall("GET", lockKey)
  if not holder then return -2 end
  if holder ~= token then return -6 end
  if rcall("LREM", activeKey, "-1", jobId) == 0 then return -3 end
  rcall("DEL", lockKey)
  rcall("SREM", stalledKey, jobId)
  return 0
end
