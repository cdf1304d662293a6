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
-- @include addDeduplicatedJob

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
