-- releaseFromActive(jobKey, lockKey, activeKey, jobId, token, deferred): the verify-and-release
-- step of every script that takes a job out of active (moveToFinished-14, finishJobs-13,
-- retryJob-12). Checks first, before anything changes: -1 no job hash (JobNotExist), -2 no lock
-- (JobLockNotExist), -6 another token holds it (JobLockMismatch), -3 not in active (JobNotInState).
-- Then takes the job out of active and counts the attempt in atm; the lock's DEL and the SREM
-- from stalled go to `deferred` (sent at the end of the same call).
-- Returns 0 when it released the job, else the code (and nothing changed).
local function releaseFromActive(jobKey, lockKey, activeKey, jobId, token, deferred)
  if rcall("EXISTS", jobKey) == 0 then return -1 end
  local holder = rcall("GET", lockKey)
  if not holder then return -2 end
  if holder ~= token then return -6 end
  if rcall("LREM", activeKey, "-1", jobId) == 0 then return -3 end
  rcall("HINCRBY", jobKey, "atm", "1")
  deferred.dels[#deferred.dels + 1] = lockKey
  deferred.unstall[#deferred.unstall + 1] = jobId
  return 0
end
