--[[
  addDependency-4 · the parent's side of queue.add(name, data, { parent }) (a step job adding a
  child while it runs; docs/flows.md, "Step jobs"): the child becomes a dependency of its parent
  before it exists, so the parent can never start (or be moved to waiting-children and started)
  without waiting for it. The child's creation spec goes into the parent's intent, as
  addFlowJobs-15 writes a FlowProducer parent's, so a producer that dies before the child's add
  leaves what a sweep needs to roll it forward. Runs in the parent's slot; the child is added next
  in its own slot (addFlowJobs-15), then the intent is cleared (ackFlowPending-2).

  KEYS[1] the parent's hash   [2] its dependencies set   [3] its pending hash   [4] flow-pending
  ARGV[1] parent id   [2] the child's job key   [3] the child's creation spec (JSON, opaque here)
      [4] now (ms)    [5] the most dependencies a parent may have
  Returns 1 recorded (also when it was already: a retried add), 0 refused: the parent already has
      ARGV[5] unsettled dependencies (nothing changed), -1 the parent does not exist (nothing changed).
  The parent's `fch` is set: its finish goes by finishFlowJob-8, which takes its flow keys when the
  job is removed at its finish. Bounded: a few commands.
]]
local rcall = redis.call

local parentKey, deps, childKey = KEYS[1], KEYS[2], ARGV[2]
if rcall("EXISTS", parentKey) == 0 then return -1 end
if rcall("SISMEMBER", deps, childKey) == 0 and rcall("SCARD", deps) >= tonumber(ARGV[5]) then return 0 end
rcall("SADD", deps, childKey)
rcall("HSET", KEYS[3], childKey, ARGV[3])
rcall("ZADD", KEYS[4], ARGV[4], ARGV[1])
rcall("HSET", parentKey, "fch", "1")
return 1
