-- newDeferred() and applyDeferred(stalledKey, deferred): writes a script gathers while it releases
-- jobs and sends once after: one DEL for every lock it released, one SREM of the stalled set for
-- every job it released, one ZADD per finished set. A batch of N jobs (finishJobs-13)
-- then costs these commands once instead of N times each; a single-job script sends the same
-- commands as before, only later in the same call. Nothing in a script reads these keys after it
-- gathered them (a released job is never taken again by the same call), so the order changes no
-- outcome. A script applies the finishes' deferred writes before it starts a pickup: Redis does
-- not roll back a script that fails half-way, and a finished job must never be left out of its
-- set with its lock still set because the pickup after it failed.
local function newDeferred()
  return { dels = {}, unstall = {}, zadds = {} }
end

-- Adds member with score to the set's deferred ZADD.
local function deferZadd(deferred, setKey, score, member)
  local args = deferred.zadds[setKey]
  if not args then
    args = {}
    deferred.zadds[setKey] = args
  end
  args[#args + 1] = score
  args[#args + 1] = member
end

-- Sends the deferred ZADD of one set now (before a trim reads that set).
local function flushZadd(deferred, setKey)
  local args = deferred.zadds[setKey]
  if args then
    rcall("ZADD", setKey, unpack(args))
    deferred.zadds[setKey] = nil
  end
end

local function applyDeferred(stalledKey, deferred)
  if #deferred.dels > 0 then rcall("DEL", unpack(deferred.dels)) end
  if #deferred.unstall > 0 then rcall("SREM", stalledKey, unpack(deferred.unstall)) end
  for setKey in pairs(deferred.zadds) do flushZadd(deferred, setKey) end
end
