--[[
  settleChildren-12 · the parent's side of children that finished: record each child's outcome
  in its parent's flow keys, and start (or fail) a parent in waiting-children once the outcome
  allows. Runs in the parents' slot; the children's finishes ran in theirs (finishFlowJob-8) and
  left a notice there, deleted once this call has answered.

  KEYS[1] wait     [2] paused   [3] meta     [4] delayed   [5] prioritized   [6] pc   [7] marker
      [8] events   [9] waiting-children      [10] failed   [11] notices      [12] notice-data
  ARGV[1] job-key prefix "P:{Q}:" (the parents' queue)   [2] now (ms)   [3] events max length
      [4..] five fields per child: parent id, child job key, "completed" or "failed",
            returnvalue (JSON) when completed or failedReason when failed,
            policy ("" none, "fail", "ignore", "remove", "continue")
  Idempotent: a child that is not in its parent's dependencies any more (settled before: a notice
  delivered twice) changes nothing. A failed child with no policy stays a dependency (the parent
  waits; a retry that completes settles it then).
  Returns { codes, noticed }: codes has one entry per child, 1 settled, 0 nothing to do (settled
  before, or not a dependency), -1 no parent; noticed lists the parents failed here
  (failParentOnFailure) that are children themselves: their notices are in KEYS[11]/[12].
  A parent failed here keeps to its own removeOnFail (read from its opts): removed with its flow
  keys, or the failed set trimmed by its count or age (at most 1000 jobs, trimFinishedFlow).
  A parent not in waiting-children when a child fails with policy fail gets cfr = its failedReason
  ("child <key> failed: <reason>", the first such child's): the runtime fails it when it is next
  taken (before its handler), when it asks to wait for children (moveToWaitingChildren-7 answers
  the reason), or instead of completing it.
]]
local rcall = redis.call
-- @include flowParent
-- @include removeFlowJobKeys
-- @include trimFinishedFlow

local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], delayed = KEYS[4], prioritized = KEYS[5],
  pc = KEYS[6], marker = KEYS[7], events = KEYS[8], waitingChildren = KEYS[9], failed = KEYS[10],
  notices = KEYS[11], noticeData = KEYS[12] }
local prefix, now, maxEvents = ARGV[1], ARGV[2], ARGV[3]
local codes, noticed = {}, {}

-- A parent failed here keeps to its own removeOnFail (its opts, as the runtime stored them), as a
-- failure at its finish does: true removes it with its flow keys, a count or { count, age } trims
-- the failed set (trimFinishedFlow, bounded). keepRuleOf reads it before the failure, whose notice
-- (when the parent is a child too) says whether it is removed.
local function keepRuleOf(parentKey)
  local ok, opts = pcall(cjson.decode, rcall("HGET", parentKey, "opts") or "{}")
  local rule = ok and type(opts) == "table" and opts.removeOnFail or nil
  if rule == true then return 0, 0 end
  if type(rule) == "number" then return rule, 0 end
  if type(rule) == "table" then return tonumber(rule.count) or -1, (tonumber(rule.age) or 0) * 1000 end
  return -1, 0
end

local function applyRemoveOnFail(parentId, parentKey, keepCount, keepAgeMs)
  if keepCount == 0 then
    rcall("ZREM", keys.failed, parentId)
    removeFlowJobKeys(parentKey)
  elseif keepCount > 0 or keepAgeMs > 0 then
    trimFinishedFlow(keys.failed, prefix, now, keepCount, keepAgeMs)
  end
end
for i = 4, #ARGV, 5 do
  local parentId, childKey, outcome, value, policy = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local parentKey = prefix .. parentId
  local code = 0
  if rcall("EXISTS", parentKey) == 0 then
    code = -1
  else
    local deps = parentKey .. ":dependencies"
    if rcall("SISMEMBER", deps, childKey) == 1 then
      code = 1
      local waiting = rcall("ZSCORE", keys.waitingChildren, parentId) ~= false
      if outcome == "completed" then
        rcall("SREM", deps, childKey)
        rcall("HDEL", parentKey .. ":unsuccessful", childKey)
        rcall("HSET", parentKey .. ":processed", childKey, value)
      elseif policy == "ignore" then
        rcall("SREM", deps, childKey)
        rcall("HSET", parentKey .. ":ignored", childKey, value)
      elseif policy == "remove" then
        -- Also a child removed after it failed with no policy (removeJob-14): it is no failure now.
        rcall("SREM", deps, childKey)
        rcall("HDEL", parentKey .. ":unsuccessful", childKey)
      else
        rcall("HSET", parentKey .. ":unsuccessful", childKey, value)
        if policy == "fail" or policy == "continue" then rcall("SREM", deps, childKey) end
        if waiting and policy == "fail" then
          local keepCount, keepAgeMs = keepRuleOf(parentKey)
          if failParent(keys, parentId, parentKey, childKey, value, now, maxEvents, keepCount) then noticed[#noticed + 1] = parentId end
          applyRemoveOnFail(parentId, parentKey, keepCount, keepAgeMs)
          waiting = false
        elseif policy == "fail" and rcall("HEXISTS", parentKey, "cfr") == 0 then
          -- A parent not waiting (running a step, or ready, delayed): marked, it fails when it is
          -- next taken, waits for children, or completes (the worker reads cfr then).
          rcall("HSET", parentKey, "cfr", "child " .. childKey .. " failed: " .. value)
        elseif waiting and policy == "continue" then
          startParent(keys, parentId, parentKey, now, maxEvents)
          waiting = false
        end
      end
      if waiting and rcall("SCARD", deps) == 0 then startParent(keys, parentId, parentKey, now, maxEvents) end
    end
  end
  codes[#codes + 1] = code
end
return { codes, noticed }
