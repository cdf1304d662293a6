-- @include removeJobKeys
-- @include flowParent
-- removeFlowJobKeys(jobKey): removeJobKeys and the job's flow keys (a parent's dependencies,
-- processed, unsuccessful, ignored and pending; docs/protocol.md, "Flows"), for the scripts that
-- delete jobs outside their finish (removeJob-14, drain-5, cleanJobsInSet-2, obliterate-2).
-- removeJobKeys itself stays as it is: it is part of the fixed moveToFinished-14.
-- The flow keys go with UNLINK (allowed in scripts): `:processed` has no bound (a step job adds
-- children round after round, each with its returnvalue), and UNLINK takes a big key out of the
-- keyspace at once and frees its memory in a background thread, so the script's own work does not
-- grow with it (a small key is freed at once, as DEL would).
local function removeFlowJobKeys(jobKey)
  removeJobKeys(jobKey)
  rcall("UNLINK", flowKeysOf(jobKey))
end
