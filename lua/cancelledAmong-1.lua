-- Generated from lua-src/cancelledAmong-1.lua by `npm run build:lua`: edit the source, not this file.
--[[
  cancelledAmong-1 · a worker's look for the jobs it holds that queue.cancelJob marked (cancelJob-9:
  field `cxl` in the job hash). Sent only after the meta field `cancels` that its heartbeat reads
  changed, never per job.

  KEYS[1] meta (declared so the call goes to the queue's slot; not read)
  ARGV[1] job-key prefix "P:{Q}:"  [2..] job ids (a worker sends as many a call as its renewal
      chunk, 1000 by default, so one call is as bounded as one extendLocks-1)
  Returns a flat array jobId, reason, jobId, reason, ... of the ids whose hash has `cxl` (the
      reason "" when the cancel gave none), in the order given; an empty array when none has.
  Reads only: one HGET per id.
]]
local rcall = redis.call
local prefix = ARGV[1]
local marked = {}
for i = 2, #ARGV do
  local reason = rcall("HGET", prefix .. ARGV[i], "cxl")
  if reason then
    marked[#marked + 1] = ARGV[i]
    marked[#marked + 1] = reason
  end
end
return marked
