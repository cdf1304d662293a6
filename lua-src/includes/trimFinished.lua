-- @include removeJobKeys
-- trimFinished(setKey, prefix, now, keepCount, keepAgeMs): the removeOnComplete / removeOnFail rule,
-- run after a finished job was added to setKey. keepCount < 0 keeps every job; otherwise only the
-- newest keepCount stay. keepAgeMs > 0 also drops jobs that finished more than keepAgeMs ago.
-- The two common rules never come here (finishJob): keep all costs one deferred ZADD, remove
-- now one DEL.
-- Bounded work: one script call deletes at most TRIM_BUDGET jobs, over all its trims (the
-- finishes of a finishJobs-13 batch share it). A script runs alone in Redis, and deleting a
-- whole backlog at once (removeOnComplete lowered from keep-all to a count on a set of 200,000
-- jobs: about a second) would stall every worker's heartbeat. Such a backlog shrinks instead over
-- the following finishes, by up to TRIM_BUDGET - 1 a finish; the set holds more than the rule
-- says until then. In the steady state (one job over the count per finish) the count rule costs
-- what it did: one ZCARD, one ZPOPMIN, one DEL.
-- now is the ARGV string; the age cut-off is arithmetic, so that one is a Lua number.
local TRIM_BUDGET = 1000
local trimBudget = TRIM_BUDGET -- left in this script call (a script's body runs afresh each call)
local function trimFinished(setKey, prefix, now, keepCount, keepAgeMs)
  if trimBudget <= 0 then return end
  local doomed = {}
  if keepAgeMs > 0 then
    doomed = rcall("ZRANGEBYSCORE", setKey, "0", tonumber(now) - keepAgeMs, "LIMIT", "0", trimBudget)
    if #doomed > 0 then rcall("ZREM", setKey, unpack(doomed)) end
  end
  if keepCount >= 0 then
    -- The oldest first, as ranks go: ZPOPMIN takes them out and names them in one command.
    local extra = math.min(rcall("ZCARD", setKey) - keepCount, trimBudget - #doomed)
    if extra > 0 then
      local popped = rcall("ZPOPMIN", setKey, extra)
      for i = 1, #popped, 2 do doomed[#doomed + 1] = popped[i] end
    end
  end
  trimBudget = trimBudget - #doomed
  for _, jobId in ipairs(doomed) do removeJobKeys(prefix .. jobId) end
end
