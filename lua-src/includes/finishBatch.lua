-- @include emitEvent
-- @include deferred
-- @include finishJob
-- @include releaseFromActive
-- @include promoteDelayed
-- @include pickup
-- @include readyAfterRetry
-- finishBatch(keys, completedKey, failedKey, firstJobArg, maxActive): the body of finishJobs-13 and
-- finishJobsBounded-13. ARGV[1..6] are finishJobs-13's (prefix, now, events max length,
-- lockDuration, rate-limit max and window); the nine fields of each job begin at ARGV[firstJobArg].
-- Finishes every job (each with its own lock check), then takes the next job for each finish that
-- asked for one (fetch-next).
-- maxActive (nil: no bound) is a queue-wide concurrency (Queue.setGlobalConcurrency): the
-- fetch-nexts take at most as many jobs as active has room for once this call's finishes left it,
-- so the bound holds even after it was lowered. Then, when active still has room and ready work is
-- left behind (and the queue is neither paused nor rate limited), it sets the ready marker: a
-- worker blocked on it because active was full learns that a slot freed, and nobody waits
-- drainDelay for it.
-- flow (nil for finishJobs-13 and finishJobsBounded-13) makes it finishFlowJobs-15: { notices,
-- noticeData, keysOf = flowKeysOf, trim = trimFinishedFlow, policyOf = noticePolicy }. Each finished job then does what finishFlowJob-8 does: a job
-- removed at its finish takes its flow keys with it, and a child leaves its notice for its parent
-- (one ZADD and one HSET for all the call's notices, written before any pickup, as the deferred
-- writes are).
-- A job whose outcome is "retried" (finishJobs-13 and finishJobsBounded-13 only) is a failed
-- attempt with attempts left, as retryJob-12 takes it: the same lock check and codes, atm counted,
-- failedReason and stacktrace written; it goes back to ready (or to delayed, its sixth field a
-- delay in ms) once this call's pickups are done, so that its own fetch-next never takes it back
-- at once (readyAfterRetry).
-- Returns { results, nextDelayedAt, rateLimitedForMs } (see finishJobs-13).

-- trimPending(deferred, trims, setKey, prefix): runs the count rule gathered for setKey
-- (finishBatchedJob) once for the call's finishes so far: one ZADD, ZCARD and ZPOPMIN, and the
-- dropped jobs' hash, logs and lock go to the call's one DEL. Keeping the newest N after each of
-- several adds leaves the same jobs as keeping the newest N once after all of them (a job dropped
-- at some step has N newer ones that all stay). Shares the call's trimBudget (trimFinished, which
-- finishJob includes).
-- A fetch-next job's hash for the reply: a small one as one JSON string, so that Node decodes one
-- reply string with JSON.parse instead of every field and value as a reply string of its own (RESP
-- decoding was the largest part of a worker's CPU at concurrency 50); a big one (over
-- JSON_REPLY_MAX_BYTES of fields and values) as the flat array, since cjson escapes every quote in
-- Redis's one thread and the reply grows (a 13 KB job cost Redis 50-75% more encoded). The encode
-- runs after the call's writes, so a failure falls back to the flat array instead of failing a
-- call whose work is done. The runtime reads both shapes.
local JSON_REPLY_MAX_BYTES = 2048
local function encodedHash(hash)
  local bytes = 0
  for i = 1, #hash do
    bytes = bytes + #hash[i]
    if bytes > JSON_REPLY_MAX_BYTES then return hash end
  end
  local ok, encoded = pcall(cjson.encode, hash)
  if ok then return encoded end
  return hash
end

local function trimPending(deferred, trims, setKey, prefix)
  local keepCount = trims[setKey]
  if not keepCount then return end
  trims[setKey] = nil
  flushZadd(deferred, setKey)
  if trimBudget <= 0 then return end
  local extra = math.min(rcall("ZCARD", setKey) - keepCount, trimBudget)
  if extra <= 0 then return end
  local popped = rcall("ZPOPMIN", setKey, extra)
  trimBudget = trimBudget - #popped / 2
  local dels = deferred.dels
  for j = 1, #popped, 2 do
    local jobKey = prefix .. popped[j]
    local n = #dels
    dels[n + 1], dels[n + 2], dels[n + 3] = jobKey, jobKey .. ":logs", jobKey .. ":lock"
  end
end

-- releaseToRemove(key, lockKey, jobId, token, activeKey, deferred): releaseFromActive for a job its
-- finish removes, with the same checks and codes in the same order, but no count of the attempt
-- (HINCRBY atm) on a hash the call deletes. releaseFromActive itself is moveToFinished-14's (fixed).
local function releaseToRemove(key, lockKey, jobId, token, activeKey, deferred)
  if rcall("EXISTS", key) == 0 then return -1 end
  local holder = rcall("GET", lockKey)
  if not holder then return -2 end
  if holder ~= token then return -6 end
  if rcall("LREM", activeKey, "-1", jobId) == 0 then return -3 end
  deferred.dels[#deferred.dels + 1] = lockKey
  deferred.unstall[#deferred.unstall + 1] = jobId
  return 0
end

-- finishJob's job table, for the finishes that go through it or keep their fields for later
-- (an age rule, a job of a flow, a retry). The common case takes its fields as arguments instead.
local function jobTable(key, lockKey, jobId, token, target, value, stacktrace, keepCount, keepAgeMs)
  return { key = key, lockKey = lockKey, id = jobId, token = token, target = target, value = value,
    stacktrace = stacktrace, keepCount = keepCount, keepAgeMs = keepAgeMs }
end

-- finishBatchedJob(keys, key, lockKey, jobId, token, target, value, stacktrace, keepCount,
--   keepAgeMs, targetKey, prefix, now, deferred, trims): finishJob for a job of a batch without
-- flows, its fields as finishJob's job table holds them (made here only for an age rule), with the
-- two rules most queues set made one command per call instead of a few per job (finishJob itself
-- is moveToFinished-14's, fixed):
-- - removed now (keep count 0): no HSET of an outcome nobody reads nor HINCRBY of its attempts
--   (releaseToRemove), and the hash and logs go to the call's one DEL with the lock (the
--   completed or failed event still carries the outcome);
-- - a count alone (keep count > 0, no age): the job's ZADD is deferred and the count rule runs
--   once per set and call (trimPending), before applyDeferred.
-- Keep all is finishJob's deferred ZADD, written here too; an age rule goes through finishJob.
-- Any other rule on a set with a pending count rule (keep all, an age, another count) runs that
-- trim first, so every rule applies to the jobs finished before it, in ARGV order, as one finish
-- after another would.
local function finishBatchedJob(keys, key, lockKey, jobId, token, target, value, stacktrace, keepCount, keepAgeMs,
    targetKey, prefix, now, deferred, trims)
  local removed = keepCount == 0
  if not removed then
    local pending = trims[targetKey]
    if pending and (pending ~= keepCount or keepAgeMs > 0) then trimPending(deferred, trims, targetKey, prefix) end
    if keepAgeMs > 0 then
      local job = jobTable(key, lockKey, jobId, token, target, value, stacktrace, keepCount, keepAgeMs)
      return finishJob(keys, job, targetKey, prefix, now, false, deferred)
    end
  end
  local code
  if removed then
    code = releaseToRemove(key, lockKey, jobId, token, keys.active, deferred)
  else
    code = releaseFromActive(key, lockKey, keys.active, jobId, token, deferred)
  end
  if code ~= 0 then return code end
  if target == "completed" then
    if not removed then rcall("HSET", key, "finishedOn", now, "returnvalue", value) end
    emitEvent(keys.events, false, "completed", jobId, "returnvalue", value)
  else
    if not removed then rcall("HSET", key, "finishedOn", now, "failedReason", value, "stacktrace", stacktrace) end
    emitEvent(keys.events, false, "failed", jobId, "failedReason", value)
  end
  if removed then
    local dels = deferred.dels
    dels[#dels + 1], dels[#dels + 2] = key, key .. ":logs"
  else
    deferZadd(deferred, targetKey, now, jobId)
    if keepCount > 0 then trims[targetKey] = keepCount end
  end
  return 0
end

-- The empty hash of a result without a next job, one table for every such slot: the reply reads
-- it and nothing writes to it.
local NO_HASH = {}

local function finishBatch(keys, completedKey, failedKey, firstJobArg, maxActive, flow)
  local prefix, now, maxEvents, lockDuration = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
  local limiterMax, limiterDuration = tonumber(ARGV[5]), ARGV[6]

  local finished = newDeferred()
  local trims = {} -- set key -> the count rule its deferred ZADDs wait for (finishBatchedJob)
  local results, tokens, slots = {}, {}, {}
  local noticeScores, noticeData = {}, {}
  local retried -- jobs released for a retry, put back to ready after the pickups (made at the first)
  local argv = ARGV -- a local: ARGV is a global, looked up by name at each use
  local resultCount, tokenCount = 0, 0
  for i = firstJobArg, #argv, 9 do
    local jobId, target = argv[i], argv[i + 2]
    local key = prefix .. jobId
    local targetKey = target == "completed" and completedKey or failedKey
    -- The keep rule (a retry's delay in its count's place) as most finishes send it ("-1" keep
    -- all, "0" remove now, no age, no delay) is read without tonumber, which parses with strtod;
    -- any other text goes through tonumber as before.
    local keepCount, keepAgeMs = argv[i + 5], argv[i + 6]
    keepCount = keepCount == "-1" and -1 or keepCount == "0" and 0 or tonumber(keepCount)
    keepAgeMs = keepAgeMs == "0" and 0 or tonumber(keepAgeMs)
    local code
    if not flow and target ~= "retried" then
      -- The common case: the job's fields go as they are, without a table for them (a table a job,
      -- with the garbage it leaves, was about 4% of a batch of 25's instructions).
      code = finishBatchedJob(keys, key, key .. ":lock", jobId, argv[i + 1], target, argv[i + 3], argv[i + 4],
        keepCount, keepAgeMs, targetKey, prefix, argv[i + 8], finished, trims)
    else
      local job = jobTable(key, key .. ":lock", jobId, argv[i + 1], target, argv[i + 3], argv[i + 4], keepCount, keepAgeMs)
      -- Read before the finish, which may delete the hash.
      local link = flow and rcall("HMGET", job.key, "parentKey", "pfp")
      -- A flow job's count or age rule is applied below by flow.trim, which also deletes the flow
      -- keys of the jobs it drops; the finish itself keeps the job (finishJob's trim cannot).
      local trimRule = flow and job.keepCount ~= 0 and (job.keepCount > 0 or job.keepAgeMs > 0)
        and { job.keepCount, job.keepAgeMs }
      if trimRule then job.keepCount, job.keepAgeMs = -1, 0 end
      if not flow then
        -- retryJob-12's first half (its checks and codes, atm counted, the lock's DEL and the SREM
        -- from stalled deferred, failedReason and stacktrace written), inline: a function more is a
        -- closure more in every call, retry or not.
        code = releaseFromActive(job.key, job.lockKey, keys.active, jobId, job.token, finished)
        if code == 0 then
          rcall("HSET", job.key, "failedReason", job.value, "stacktrace", job.stacktrace)
          job.at = argv[i + 8]
          retried = retried or {}
          retried[#retried + 1] = job
        end
      else
        code = finishJob(keys, job, targetKey, prefix, argv[i + 8], false, finished)
      end
      if flow and code == 0 then
        if job.keepCount == 0 then rcall("UNLINK", flow.keysOf(job.key)) end
        if trimRule then
          flushZadd(finished, targetKey) -- the trim reads the set: this job must be in it
          flow.trim(targetKey, prefix, argv[i + 8], trimRule[1], trimRule[2])
        end
        if link[1] then
          local n = #noticeScores
          noticeScores[n + 1], noticeScores[n + 2] = argv[i + 8], jobId
          n = #noticeData
          noticeData[n + 1], noticeData[n + 2] = jobId, cjson.encode({ link[1], target, job.value, flow.policyOf(link[2], target, job.keepCount) })
        end
      end
    end
    local at = resultCount
    results[at + 1], results[at + 2], results[at + 3] = code, 0, NO_HASH
    resultCount = at + 3
    if code == 0 and argv[i + 7] ~= "" then
      tokenCount = tokenCount + 1
      tokens[tokenCount], slots[tokenCount] = argv[i + 7], at + 2
    end
  end
  for setKey in pairs(trims) do trimPending(finished, trims, setKey, prefix) end
  applyDeferred(keys.stalled, finished)
  if #noticeScores > 0 then
    rcall("ZADD", flow.notices, unpack(noticeScores))
    rcall("HSET", flow.noticeData, unpack(noticeData))
  end

  if maxActive then
    -- The first finishes that asked keep their fetch-next, as many as there is room for.
    local room = math.max(maxActive - rcall("LLEN", keys.active), 0)
    for i = #tokens, room + 1, -1 do
      tokens[i], slots[i] = nil, nil
    end
  end

  local nextDelayed, limitedFor, paused = 0, 0, nil
  if #tokens > 0 then
    nextDelayed = promoteDelayed(keys, prefix, tonumber(now), maxEvents)
    paused = rcall("HEXISTS", keys.meta, "paused") == 1
    if not paused then
      local ids, hashes
      ids, hashes, limitedFor = takeNextJobs(keys, prefix, tokens, lockDuration, now, false, limiterMax, limiterDuration)
      for i = 1, #ids do
        local slot = slots[i]
        results[slot], results[slot + 1] = ids[i], encodedHash(hashes[i])
      end
    end
  end
  if retried then
    -- After the pickups (readyAfterRetry): to delayed at finishedOn + delay, or back to ready.
    for _, job in ipairs(retried) do
      local dueAt = job.keepCount > 0 and tostring(tonumber(job.at) + job.keepCount) or nil
      readyAfterRetry(keys, job.id, job.key, dueAt, job.value, false)
    end
  end
  if maxActive and limitedFor == 0 and rcall("LLEN", keys.active) < maxActive
    and (rcall("LLEN", keys.wait) > 0 or rcall("ZCARD", keys.prioritized) > 0) then
    if paused == nil then paused = rcall("HEXISTS", keys.meta, "paused") == 1 end
    if not paused then rcall("ZADD", keys.marker, "0", "0") end
  end
  trimEvents(keys.events, maxEvents) -- the events above were added untrimmed
  return { results, nextDelayed, limitedFor }
end
