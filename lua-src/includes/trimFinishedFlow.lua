-- @include removeJobKeys
-- @include flowParent
-- trimFinishedFlow(setKey, prefix, now, keepCount, keepAgeMs): trimFinished's rule for a finish of
-- a job of a flow (finishFlowJobs-15): the jobs it drops take their flow keys (a parent's
-- :dependencies, :processed, ...) with them, by UNLINK (a step parent's :processed has no bound). trimFinished itself cannot: it is inlined in the fixed
-- moveToFinished-14, whose text never changes. The same bound (at most FLOW_TRIM_BUDGET jobs per
-- script call, over all its trims), the same order (the oldest first).
local FLOW_TRIM_BUDGET = 1000
local flowTrimBudget = FLOW_TRIM_BUDGET
local function trimFinishedFlow(setKey, prefix, now, keepCount, keepAgeMs)
  if flowTrimBudget <= 0 then return end
  local doomed = {}
  if keepAgeMs > 0 then
    doomed = rcall("ZRANGEBYSCORE", setKey, "0", tonumber(now) - keepAgeMs, "LIMIT", "0", flowTrimBudget)
    if #doomed > 0 then rcall("ZREM", setKey, unpack(doomed)) end
  end
  if keepCount >= 0 then
    local extra = math.min(rcall("ZCARD", setKey) - keepCount, flowTrimBudget - #doomed)
    if extra > 0 then
      local popped = rcall("ZPOPMIN", setKey, extra)
      for i = 1, #popped, 2 do doomed[#doomed + 1] = popped[i] end
    end
  end
  flowTrimBudget = flowTrimBudget - #doomed
  for _, jobId in ipairs(doomed) do
    removeJobKeys(prefix .. jobId)
    rcall("UNLINK", flowKeysOf(prefix .. jobId))
  end
end
