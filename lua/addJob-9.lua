-- Generated from lua-src/addJob-9.lua by `npm run build:lua`: edit the source, not this file.
--[[
  addJob-9 · add one job: ready (wait, or paused), prioritized, or delayed; optionally deduplicated.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events
  ARGV[1] job-key prefix "P:{Q}:"   [2] custom job id, or "" for the next id counter value
      [3] name  [4] data (JSON)  [5] opts (JSON)  [6] now (ms)  [7] delay ms (0 = none)
      [8] priority (0 = none)   [9] "1" for LIFO   [10] events max length
      [11] automatic id prefix (optional; "" or absent for a plain queue, "<i>-" for partition i)
      [12] deduplication id (optional; absent or "" = none: then [11] is sent, "" on a plain queue)
      [13] its ttl ms ("0" = none: simple mode)  [14] "1" for extend  [15] "1" for replace
  Optional trailing ARGV, so an add without deduplication sends what it always sent (ARGV[1..10],
  [11] on a partition) and runs the same commands.
  Deduplication (docs/deduplication.md, docs/protocol.md): the key P:{Q}:de:<id> holds the id of the
  job that holds the deduplication id; the add is dropped while it holds (includes/deduplicationHolder.lua).
  The job hash of a deduplicated add gets deid = the deduplication id.
  Returns { jobId, 1 } when added; { jobId, 0 } when a job with that custom id already exists:
      then nothing at all is written (the existing job is the answer); { jobId, 2 } when the
      deduplication id is held: jobId is the job that holds it, and nothing is written but the
      `deduplicated` event (and with extend the key's TTL, started again).
]]
local rcall = redis.call
-- [lua-src/includes/emitEvent.lua]
-- emitEvent(eventsKey, maxEvents, name, jobId, ...extra field/value pairs)
-- Every lifecycle event is one XADD trimmed to about maxEvents entries, so the stream stays bounded.
-- maxEvents is the ARGV string as the runtime sent it: a Lua number given to redis.call is
-- formatted with %.17g on every call, which costs more than many commands (see docs/protocol.md).
-- A batch script passes false and trims once at its end (trimEvents): the stream is over its
-- bound by at most that call's events, for the length of the call.
local function emitEvent(eventsKey, maxEvents, name, jobId, ...)
  if maxEvents then
    rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", name, "jobId", jobId, ...)
  else
    rcall("XADD", eventsKey, "*", "event", name, "jobId", jobId, ...)
  end
end

-- trimEvents(eventsKey, maxEvents): the one trim of a batch script's untrimmed events.
local function trimEvents(eventsKey, maxEvents)
  rcall("XTRIM", eventsKey, "MAXLEN", "~", maxEvents)
end
-- [lua-src/includes/pushReady.lua]
-- placeReady(keys, jobId, priority, lifo, paused): put a job where workers take ready jobs from.
-- keys: { wait, paused, meta, prioritized, pc, marker }.
-- A priority > 0 goes to the prioritized zset, scored priority * 2^32 + a counter (pc) so jobs of one
-- priority keep FIFO order. Otherwise the wait list, or the paused list while the queue is paused;
-- workers take from the right end, so FIFO pushes left and LIFO pushes right.
local function placeReady(keys, jobId, priority, lifo, paused)
  if priority > 0 then
    local seq = rcall("INCR", keys.pc) % 4294967296
    rcall("ZADD", keys.prioritized, priority * 4294967296 + seq, jobId)
  else
    rcall(lifo and "RPUSH" or "LPUSH", paused and keys.paused or keys.wait, jobId)
  end
end

-- pushReady(keys, jobId, priority, lifo): placeReady, then wake one worker blocked on BZPOPMIN
-- with the marker; a paused queue wakes nobody.
local function pushReady(keys, jobId, priority, lifo)
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  placeReady(keys, jobId, priority, lifo, paused)
  if not paused then rcall("ZADD", keys.marker, "0", "0") end
end
-- [lua-src/includes/addOneJob.lua]
-- addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix): the body of addJob-9 and addJobs-9.
-- keys: { wait, paused, meta, id, delayed, prioritized, pc, marker, events }.
-- job: { id = custom id or "", name, data, opts, delay, priority, lifo }: delay and priority are the
-- ARGV strings, written as they are (as is now, a string); they are compared as numbers.
-- idPrefix: put before an automatic id ("" for a plain queue; "3-" in partition 3 of a
-- partitioned queue, so its ids read 3-1, 3-2, ... and name their partition).
-- Returns jobId, created, ready: created is false when a job with that custom id exists (then
-- nothing at all is written); ready is true when the job went to wait or prioritized, so the
-- caller owes the wake-up marker (set once per call, however many jobs it added).
local function addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
  local jobId = job.id
  if jobId == "" then
    jobId = idPrefix .. rcall("INCR", keys.id)
  elseif rcall("EXISTS", prefix .. jobId) == 1 then
    return jobId, false, false
  end
  rcall("HSET", prefix .. jobId, "name", job.name, "data", job.data, "opts", job.opts,
    "timestamp", now, "delay", job.delay, "priority", job.priority)
  local delay = tonumber(job.delay)
  if delay > 0 then
    local dueAt = tonumber(now) + delay
    rcall("ZADD", keys.delayed, dueAt, jobId)
    -- Wake one blocked worker so it shortens its block to this job's due time.
    rcall("ZADD", keys.marker, dueAt, "1")
    emitEvent(keys.events, maxEvents, "delayed", jobId, "delay", dueAt)
    return jobId, true, false
  end
  placeReady(keys, jobId, tonumber(job.priority), job.lifo, paused)
  emitEvent(keys.events, maxEvents, "waiting", jobId)
  return jobId, true, true
end
-- [lua-src/includes/deduplicationHolder.lua]
-- deduplicationHolder(dedupKey, prefix, dedupId): the id of the job that holds deduplication id
-- dedupId (its key P:{Q}:de:<dedupId>, a string holding that job's id), or false when it is free.
-- No script deletes the key when its job finishes (moveToFinished-14 is fixed), so whether it still
-- holds is read from the key and the job alone, here, by every script that asks:
--   * a key with a TTL (an add with a ttl: throttle and debounce) holds until it expires, whatever
--     became of its job;
--   * a key without one (simple mode) holds while its job is there and has not finished: the job's
--     hash has deid = dedupId and no finishedOn (set by every finish, completed or final failure,
--     a stalled-out failure included; cleared by reprocessJob-9). deid also makes a recycled job id
--     (a custom id used again, or automatic ids that restart after an obliterate) hold nothing.
local function deduplicationHolder(dedupKey, prefix, dedupId)
  local ttl = rcall("PTTL", dedupKey)
  if ttl == -2 then return false end
  local holder = rcall("GET", dedupKey)
  if ttl >= 0 then return holder end
  local job = rcall("HMGET", prefix .. holder, "deid", "finishedOn")
  if job[1] == dedupId and not job[2] then return holder end
  return false
end
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
end
-- [lua-src/includes/addDeduplicatedJob.lua]
-- addDeduplicatedJob(keys, prefix, job, now, maxEvents, paused, idPrefix): addOneJob, for a job that
-- may carry job.dedup = { id, key (P:{Q}:de:<id>), ttl (the ARGV string, "0" = none), extend, replace }
-- (docs/deduplication.md). A job without it is exactly addOneJob. keys as addOneJob's.
-- Returns jobId, outcome, ready: outcome 1 added; 0 a job with that custom id exists (nothing is
-- written); 2 deduplicated: jobId is the job that holds the id, and nothing is written but the
-- `deduplicated` event (and, with extend, the key's TTL started again). ready as addOneJob's.
-- With replace, a holder still in delayed is removed (event removed, reason "replaced by
-- deduplication") and this job takes the id in its place: outcome 1, and the `deduplicated` event
-- names this job as the one kept and the removed one as deduplicatedJobId. A holder in any other
-- state is kept, as without replace.
local function addDeduplicatedJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
  local dedup = job.dedup
  if not dedup then
    local jobId, created, ready = addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
    return jobId, created and 1 or 0, ready
  end
  -- A custom id that exists answers first, as for any add: that job, nothing written.
  if job.id ~= "" and rcall("EXISTS", prefix .. job.id) == 1 then return job.id, 0, false end
  local holder = deduplicationHolder(dedup.key, prefix, dedup.id)
  local replaced = false
  if holder then
    if dedup.replace and rcall("ZREM", keys.delayed, holder) == 1 then
      replaced = holder
      removeJobKeys(prefix .. holder)
      emitEvent(keys.events, maxEvents, "removed", holder, "reason", "replaced by deduplication")
    else
      if dedup.extend then rcall("SET", dedup.key, holder, "PX", dedup.ttl) end
      -- The add takes no id (nothing is written for it), so the event names it by its custom id only.
      if job.id == "" then
        emitEvent(keys.events, maxEvents, "deduplicated", holder, "deduplicationId", dedup.id)
      else
        emitEvent(keys.events, maxEvents, "deduplicated", holder, "deduplicationId", dedup.id, "deduplicatedJobId", job.id)
      end
      return holder, 2, false
    end
  end
  local jobId, _, ready = addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
  rcall("HSET", prefix .. jobId, "deid", dedup.id)
  if replaced and not dedup.extend then
    rcall("SET", dedup.key, jobId, "KEEPTTL")
  elseif dedup.ttl ~= "0" then
    rcall("SET", dedup.key, jobId, "PX", dedup.ttl)
  else
    rcall("SET", dedup.key, jobId)
  end
  if replaced then
    emitEvent(keys.events, maxEvents, "deduplicated", jobId, "deduplicationId", dedup.id, "deduplicatedJobId", replaced)
  end
  return jobId, 1, ready
end

local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], id = KEYS[4], delayed = KEYS[5],
  prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[8], events = KEYS[9] }
local job = { id = ARGV[2], name = ARGV[3], data = ARGV[4], opts = ARGV[5], delay = ARGV[7],
  priority = ARGV[8], lifo = ARGV[9] == "1" }
if ARGV[12] and ARGV[12] ~= "" then
  job.dedup = { id = ARGV[12], key = ARGV[1] .. "de:" .. ARGV[12], ttl = ARGV[13], extend = ARGV[14] == "1",
    replace = ARGV[15] == "1" }
end
local paused = rcall("HEXISTS", keys.meta, "paused") == 1
local jobId, outcome, ready = addDeduplicatedJob(keys, ARGV[1], job, ARGV[6], ARGV[10], paused, ARGV[11] or "")
if ready and not paused then rcall("ZADD", keys.marker, "0", "0") end
return { jobId, outcome }
