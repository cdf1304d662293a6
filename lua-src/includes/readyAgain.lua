-- @include emitEvent
-- @include pushReady
-- readyAgain(prefix, ids, prev, maxEvents, prepare): the batch scripts' shared end (retryJobs-8,
-- promoteJobs-8), KEYS[2..8] being wait, paused, meta, prioritized, pc, marker, events. Each id
-- whose hash exists is prepared (prepare(jobKey): the script's own field changes), placed with its
-- stored priority, FIFO (placeReady), in paused while the queue is paused, with an event waiting
-- (prev). The marker once, when a job became ready and the queue is not paused.
local function readyAgain(prefix, ids, prev, maxEvents, prepare)
  local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5],
    pc = KEYS[6], marker = KEYS[7] }
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  local placed = false
  for _, jobId in ipairs(ids) do
    local jobKey = prefix .. jobId
    if rcall("EXISTS", jobKey) == 1 then
      prepare(jobKey)
      placeReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false, paused)
      emitEvent(KEYS[8], maxEvents, "waiting", jobId, "prev", prev)
      placed = true
    end
  end
  if placed and not paused then rcall("ZADD", keys.marker, "0", "0") end
end
