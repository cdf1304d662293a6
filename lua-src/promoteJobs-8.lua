--[[
  promoteJobs-8 · one batch of queue.promoteJobs(): delayed jobs become ready now, the first due
  first, each as job.promote() (promote-9) makes one ready.

  KEYS[1] delayed  [2] wait  [3] paused  [4] meta  [5] prioritized  [6] pc  [7] marker  [8] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] count: at most this many ids a call  [3] events max length
  Returns how many ids it took out of delayed; fewer than count means delayed is empty.
  queue.promoteJobs calls again while a call took count.
  Each job: `delay` set to 0, placed with its stored priority, FIFO (placeReady), in paused while
  the queue is paused; event waiting (prev: delayed). The marker once, when a job became ready and
  the queue is not paused. An id without a hash is only taken out of delayed.
]]
local rcall = redis.call
-- @include readyAgain

local prefix, maxEvents = ARGV[1], ARGV[3]
local ids = rcall("ZRANGE", KEYS[1], "0", tostring(tonumber(ARGV[2]) - 1))
if #ids == 0 then return 0 end
rcall("ZREMRANGEBYRANK", KEYS[1], "0", tostring(#ids - 1))
readyAgain(prefix, ids, "delayed", maxEvents, function(jobKey)
  rcall("HSET", jobKey, "delay", "0")
end)
return #ids
