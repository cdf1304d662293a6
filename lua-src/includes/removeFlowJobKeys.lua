-- @include removeJobKeys
-- @include flowParent
-- removeFlowJobKeys(jobKey): removeJobKeys and the job's flow keys (a parent's dependencies,
-- processed, unsuccessful, ignored and pending; docs/protocol.md, "Flows"), for the scripts that
-- delete jobs outside their finish (removeJob-14, drain-5, cleanJobsInSet-2, obliterate-2).
-- removeJobKeys itself stays as it is: it is part of the fixed moveToFinished-14.
local function removeFlowJobKeys(jobKey)
  removeJobKeys(jobKey)
  rcall("DEL", flowKeysOf(jobKey))
end
