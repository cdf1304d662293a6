-- checkLock(jobKey, lockKey, token): the verification step every script that takes a job out of
-- active runs before it changes anything. Returns 0 when the token holds the lock, else the code:
-- -1 no job hash (JobNotExist), -2 no lock (JobLockNotExist), -6 another token (JobLockMismatch).
local function checkLock(jobKey, lockKey, token)
  if rcall("EXISTS", jobKey) == 0 then return -1 end
  local holder = rcall("GET", lockKey)
  if not holder then return -2 end
  if holder ~= token then return -6 end
  return 0
end
