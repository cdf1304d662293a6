-- pushReady(keys, jobId, priority, lifo): put a job where workers take ready jobs from and wake one.
-- keys: { wait, paused, meta, prioritized, pc, marker }.
-- A priority > 0 goes to the prioritized zset, scored priority * 2^32 + a counter (pc) so jobs of one
-- priority keep FIFO order. Otherwise the wait list, or the paused list while the queue is paused;
-- workers take from the right end, so FIFO pushes left and LIFO pushes right.
-- The marker wakes a worker blocked on BZPOPMIN; a paused queue wakes nobody.
local function pushReady(keys, jobId, priority, lifo)
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  if priority > 0 then
    local seq = rcall("INCR", keys.pc) % 4294967296
    rcall("ZADD", keys.prioritized, priority * 4294967296 + seq, jobId)
  else
    local target = paused and keys.paused or keys.wait
    rcall(lifo and "RPUSH" or "LPUSH", target, jobId)
  end
  if not paused then rcall("ZADD", keys.marker, 0, "0") end
end
