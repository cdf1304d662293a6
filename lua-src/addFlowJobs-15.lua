--[[
  addFlowJobs-15 · add jobs of a flow to one queue (FlowProducer; docs/protocol.md, "Flows"): a
  job with children waits in waiting-children with its dependencies and their creation specs
  (the intent, KEYS[11] flow-pending: parent id -> when written); a job without children is
  added as addJob-9 adds one. A child carries its parent link (parentKey, parent, pfp).
  Idempotent: a job that exists with the same parent link (a root: with none) is left as it is
  (a producer's retry, a flow added again with the same ids, or the sweep rolling a dead
  producer's intent forward: lib/runtime/flows/flow-recovery.ts, docs/protocol.md "Flows:
  recovery", which passes the intent's specs as they were written). Such a child that has already finished writes its notice again
  (KEYS[14], [15], from its hash and the set that holds it), as its finish did: its new parent
  hears of it, as the old one did.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events   [10] waiting-children   [11] flow-pending   [12] completed   [13] failed
      [14] notices   [15] notice-data
  ARGV[1] job-key prefix "P:{Q}:"   [2] events max length   [3] now (ms)
      then per job: id, name, data (JSON), opts (JSON), timestamp (ms), delay ms, priority,
      "1" for LIFO, parent job key ("" = none), parent (JSON { id, queueKey }, "" = none),
      policy on failure ("" none, "fail", "ignore", "remove", "continue"), n = its children,
      then n pairs: child job key, the child's creation spec (JSON, opaque here)
  Returns one code per job, in order: 1 added; 0 it existed with this parent link (unchanged);
      3 the same, finished: its notice written again; 2 it existed as another job (another
      parent link): unchanged, and not this flow's.
  Bounded work: the runtime sends at most 200 jobs and 1,000 children a call, one parent's
  children at most 10,000 (written 1,000 a command: Lua's unpack takes no more than ~8,000).
]]
local rcall = redis.call
-- @include addOneJob
-- @include emitEvent
-- @include flowParent

local CHUNK = 1000
local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], id = KEYS[4], delayed = KEYS[5],
  prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[8], events = KEYS[9] }
local waitingChildren, flowPending, completed, failed = KEYS[10], KEYS[11], KEYS[12], KEYS[13]
local noticeKeys = { notices = KEYS[14], noticeData = KEYS[15] }
local prefix, maxEvents, now = ARGV[1], ARGV[2], ARGV[3]
local paused = rcall("HEXISTS", keys.meta, "paused") == 1
local codes, anyReady = {}, false

-- An existing job with this parent link: unchanged; when it has finished, its notice again.
local function existing(id, jobKey, parentKey)
  local stored = rcall("HMGET", jobKey, "parentKey", "pfp", "returnvalue", "failedReason")
  if (stored[1] or "") ~= parentKey then return 2 end
  if parentKey == "" then return 0 end
  if rcall("ZSCORE", completed, id) then
    writeNotice(noticeKeys, id, parentKey, "completed", stored[3] or "null", stored[2] or "", now)
    return 3
  elseif rcall("ZSCORE", failed, id) then
    writeNotice(noticeKeys, id, parentKey, "failed", stored[4] or "", stored[2] or "", now)
    return 3
  end
  return 0
end

local i = 4
while i <= #ARGV do
  local id, parentKey, parentJson, policy = ARGV[i], ARGV[i + 8], ARGV[i + 9], ARGV[i + 10]
  local children = tonumber(ARGV[i + 11])
  local first, last = i + 12, i + 11 + 2 * children
  local jobKey = prefix .. id
  if rcall("EXISTS", jobKey) == 1 then
    codes[#codes + 1] = existing(id, jobKey, parentKey)
  else
    codes[#codes + 1] = 1
    local timestamp = ARGV[i + 4]
    if children > 0 then
      rcall("HSET", jobKey, "name", ARGV[i + 1], "data", ARGV[i + 2], "opts", ARGV[i + 3], "timestamp", timestamp,
        "delay", ARGV[i + 5], "priority", ARGV[i + 6], "fch", "1")
      if ARGV[i + 7] == "1" then rcall("HSET", jobKey, "lifo", "1") end
      for from = first, last, 2 * CHUNK do
        local to = math.min(last, from + 2 * CHUNK - 1)
        local childKeys, pending = {}, {}
        for c = from, to, 2 do
          childKeys[#childKeys + 1] = ARGV[c]
          pending[#pending + 1] = ARGV[c]
          pending[#pending + 1] = ARGV[c + 1]
        end
        rcall("SADD", jobKey .. ":dependencies", unpack(childKeys))
        rcall("HSET", jobKey .. ":pending", unpack(pending))
      end
      rcall("ZADD", flowPending, now, id)
      rcall("ZADD", waitingChildren, timestamp, id)
      emitEvent(keys.events, maxEvents, "waiting-children", id)
    else
      local job = { id = id, name = ARGV[i + 1], data = ARGV[i + 2], opts = ARGV[i + 3], delay = ARGV[i + 5],
        priority = ARGV[i + 6], lifo = ARGV[i + 7] == "1" }
      local _, _, ready = addOneJob(keys, prefix, job, timestamp, maxEvents, paused, "")
      anyReady = anyReady or ready
    end
    if parentKey ~= "" then rcall("HSET", jobKey, "parentKey", parentKey, "parent", parentJson, "pfp", policy) end
  end
  i = last + 1
end
if anyReady and not paused then rcall("ZADD", keys.marker, "0", "0") end
return codes
