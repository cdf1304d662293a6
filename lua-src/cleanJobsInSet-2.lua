--[[
  cleanJobsInSet-2 · queue.clean(), one window of it: look at the ids of one state from a rank on
  (at most 500), and remove those older than a cut-off, up to a limit. The runtime calls again
  from the rank it answers until the limit or the end of the state (Queue.clean).
  The state is a list (wait, paused, active) or a zset (prioritized, delayed, completed, failed).

  KEYS[1] the state's key  [2] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] cut-off timestamp ms: jobs at or before it go
      [3] limit: remove at most this many in this call (0 = no limit)  [4] events max length
      [5] the rank to start at (0 on the first call)
  Returns { removed ids, next rank }: the next rank is where the next call starts (the ids this
      call kept stay before it), or -1 when this window reached the end of the state.
  Age is finishedOn for finished jobs and timestamp (creation) for the others; an id without a
  hash counts as old. Jobs whose lock is held are never removed. Ranks go as LRANGE and ZRANGE
  give them: a list from its left end, a zset from its lowest score.
  Bounded work: a script runs alone in Redis, so one call reads one window of at most WINDOW ids
  (LRANGE or ZRANGE of that window only) and removes the chosen ones with one command: ZREM of
  them all for a zset; for a list, each one's slot is overwritten with a sentinel (LSET) and one
  LREM, counted and from the nearer end, takes the sentinels out. A window takes about 2 ms on a
  zset and 2.5 to 3.5 ms on a list of 200,000 (at worst 8). Reading the whole state, with an LREM per id that scans the
  list each time, took 1.5 s for 200,000 finished jobs, and grew with the square of a list's
  length: 3.8 s for a list of 20,000. A job that moves between two calls may be missed or looked
  at twice: clean is a sweep, not a snapshot.
  A removed job's flow keys go with it (removeFlowJobKeys), and a simple-mode deduplication key
  naming it (freeDeduplicationOf: no TTL). Its parent, in another queue, is not
  told (no script can reach its slot): docs/flows.md, "Removing jobs of a flow".
  Emits one `cleaned` event (with this call's count) per call that removed jobs.
]]
local rcall = redis.call
-- @include emitEvent
-- @include removeFlowJobKeys
-- @include freeDeduplication

local WINDOW = 500
-- No job id holds ":" (PROTOCOL.md, L1), so no id is the sentinel.
local SENTINEL = "echomq:cleaned:"

local setKey, prefix, cutoff, limit = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local start = tonumber(ARGV[5])
local isList = rcall("TYPE", setKey)["ok"] == "list"
local last = start + WINDOW - 1
local ids = isList and rcall("LRANGE", setKey, start, last) or rcall("ZRANGE", setKey, start, last)
local removed, looked = {}, 0
for i, jobId in ipairs(ids) do
  if limit > 0 and #removed >= limit then break end
  looked = i
  local jobKey = prefix .. jobId
  local stamps = rcall("HMGET", jobKey, "finishedOn", "timestamp")
  local at = tonumber(stamps[1]) or tonumber(stamps[2]) or 0
  if at <= cutoff and rcall("EXISTS", jobKey .. ":lock") == 0 then
    if isList then rcall("LSET", setKey, start + i - 1, SENTINEL) end
    freeDeduplicationOf(jobKey, jobId)
    removeFlowJobKeys(jobKey)
    removed[#removed + 1] = jobId
  end
end

if #removed > 0 then
  if not isList then
    rcall("ZREM", setKey, unpack(removed))
  elseif start < rcall("LLEN", setKey) - (start + looked) then
    rcall("LREM", setKey, #removed, SENTINEL) -- the window is nearer the left end
  else
    rcall("LREM", setKey, -#removed, SENTINEL)
  end
  emitEvent(KEYS[2], ARGV[4], "cleaned", "", "count", tostring(#removed))
end
if #ids < WINDOW and looked == #ids then return { removed, -1 } end
return { removed, start + looked - #removed }
