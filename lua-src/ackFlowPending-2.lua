--[[
  ackFlowPending-2 · the producer (or the sweep) made these children of a parent: their creation
  specs leave the parent's intent, and the parent leaves flow-pending once none is left. The
  roll-forward (docs/protocol.md, "Flows: recovery") calls it with no child key for a parent whose
  intent is gone (the parent was removed): it just leaves flow-pending.

  KEYS[1] the parent's pending hash (P:{Q}:<pid>:pending)   [2] flow-pending
  ARGV[1] parent id   [2..] child job keys (HDEL 1,000 a command: Lua's unpack takes ~8,000 at most)
  Returns how many specs are left.
]]
local rcall = redis.call
for from = 2, #ARGV, 1000 do
  rcall("HDEL", KEYS[1], unpack(ARGV, from, math.min(#ARGV, from + 999)))
end
local left = rcall("HLEN", KEYS[1])
if left == 0 then rcall("ZREM", KEYS[2], ARGV[1]) end
return left
