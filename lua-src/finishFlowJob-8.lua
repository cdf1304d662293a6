--[[
  finishFlowJob-8 · finish a job of a flow (a child, or a parent with flow keys) for good:
  moveToFinished-14's checks and writes, without fetch-next, and in the same call
  - a child leaves a notice for its parent (KEYS[7] notices: child id -> when, KEYS[8]
    notice-data: child id -> JSON [parentKey, outcome, value, policy]; the policy is the child's
    `pfp`, or "remove" for a child that failed with none and is removed now): the parent lives in
    another queue's slot, so the runtime settles it next (settleChildren-12) and deletes the
    notice once that has answered; a sweep delivers notices a dead worker left;
  - a job removed at its finish (keep count 0) takes its flow keys with it, by UNLINK: a step
    parent's `:processed` has no bound, and UNLINK frees a big one outside the script.
  Only a final outcome comes here: a failure that will be retried goes to retryJob-12.

  KEYS[1] active   [2] events   [3] stalled   [4] target set (completed or failed)
      [5] the job's hash   [6] the job's lock   [7] notices   [8] notice-data
  ARGV[1] jobId    [2] token    [3] now (ms)   [4] "completed" or "failed"
      [5] returnvalue (JSON) when completed, failedReason when failed
      [6] stacktrace (JSON array) when failed, "" otherwise
      [7] keep count (-1 = all, 0 = remove the job now)   [8] keep age ms (0 = any)
      [9] job-key prefix "P:{Q}:"   [10] events max length
  Returns -1 (no job), -2 (no lock), -6 (another token), -3 (not in active): nothing changed.
      Otherwise { 0, parentKey or "", policy or "", the notice's JSON or "" }.
]]
local rcall = redis.call
-- @include deferred
-- @include finishJob
-- @include flowParent

local jobKey, jobId, now, prefix, maxEvents = KEYS[5], ARGV[1], ARGV[3], ARGV[9], ARGV[10]
-- Read before the finish, which may delete the hash.
local link = rcall("HMGET", jobKey, "parentKey", "pfp")
local job = { key = jobKey, lockKey = KEYS[6], id = jobId, token = ARGV[2], target = ARGV[4],
  value = ARGV[5], stacktrace = ARGV[6], keepCount = tonumber(ARGV[7]), keepAgeMs = tonumber(ARGV[8]) }
local finished = newDeferred()
local code = finishJob({ active = KEYS[1], events = KEYS[2] }, job, KEYS[4], prefix, now, maxEvents, finished)
if code ~= 0 then return code end
applyDeferred(KEYS[3], finished)
if job.keepCount == 0 then rcall("UNLINK", flowKeysOf(jobKey)) end
if not link[1] then return { 0, "", "", "" } end
local policy = noticePolicy(link[2], ARGV[4], job.keepCount)
local notice = writeNotice({ notices = KEYS[7], noticeData = KEYS[8] }, jobId, link[1], ARGV[4], ARGV[5], policy, now)
return { 0, link[1], policy, notice }
