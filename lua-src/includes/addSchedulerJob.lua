-- @include addOneJob
-- addSchedulerJob(keys, prefix, schedulerId, slot, now, maxEvents): the job of one slot of a job
-- scheduler, built from the template in the scheduler's hash. Its id is repeat:<schedulerId>:<slot>
-- (slot in ms), so one slot can never hold two jobs: a job of that id already there is the slot's
-- job and nothing is written. The job is delayed until the slot, or ready when the slot has come.
-- Its hash carries rjk (the scheduler id), rpt (the schedule as JSON: the runtime computes the
-- following slots from it) and rgn (the scheduler's generation, which each replacing upsert sets
-- anew). Counts the job in the scheduler's ic. keys: schedulerKeys(). slot and now are ARGV
-- strings (ms). Returns true when it made the job.
local function addSchedulerJob(keys, prefix, schedulerId, slot, now, maxEvents)
  local jobId = "repeat:" .. schedulerId .. ":" .. slot
  local t = rcall("HMGET", keys.scheduler, "name", "data", "opts", "priority", "lifo", "repeat", "gen")
  local delay = tonumber(slot) - tonumber(now)
  if delay < 0 then delay = 0 end
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  local job = { id = jobId, name = t[1], data = t[2], opts = t[3], delay = tostring(delay), priority = t[4],
    lifo = t[5] == "1" }
  local _, created, ready = addOneJob(keys, prefix, job, now, maxEvents, paused, "")
  if not created then return false end
  rcall("HSET", prefix .. jobId, "rjk", schedulerId, "rpt", t[6], "rgn", t[7])
  rcall("HINCRBY", keys.scheduler, "ic", "1")
  if ready and not paused then rcall("ZADD", keys.marker, "0", "0") end
  return true
end

-- setSchedulerChain(keys, prefix, schedulerId, first, second, now, maxEvents): point the scheduler
-- at its next two slots (ms strings; "" = none: the schedule ends before) and make the job of each
-- that has none, while the limit allows (ic < limit). A slot at or before `last` (the latest slot
-- that ran) is dropped, whatever clock computed it, and so is a slot that gets no job. With no slot
-- left the scheduler ends: it stays as a record (ended = 1, ic kept, scored +inf in the repeat
-- zset, where no read or repair sees it), so that the same upsert at the next boot does not start
-- it again. Returns the chain's first slot, or "" when the scheduler ended.
local function setSchedulerChain(keys, prefix, schedulerId, first, second, now, maxEvents)
  local state = rcall("HMGET", keys.scheduler, "limit", "last")
  local limit, last = tonumber(state[1] or "0"), tonumber(state[2] or "-1")
  local chain = {}
  for _, slot in ipairs({ first, second }) do
    if slot ~= "" and slot ~= chain[1] and tonumber(slot) > last then
      local jobId = "repeat:" .. schedulerId .. ":" .. slot
      local exists = rcall("EXISTS", prefix .. jobId) == 1
      if exists or limit == 0 or tonumber(rcall("HGET", keys.scheduler, "ic") or "0") < limit then
        if not exists then addSchedulerJob(keys, prefix, schedulerId, slot, now, maxEvents) end
        chain[#chain + 1] = slot
      end
    end
  end
  if #chain == 0 then
    rcall("HSET", keys.scheduler, "ended", "1", "next", "", "after", "")
    rcall("ZADD", keys.schedulers, "+inf", schedulerId)
    return ""
  end
  rcall("HSET", keys.scheduler, "next", chain[1], "after", chain[2] or "")
  rcall("HDEL", keys.scheduler, "ended")
  rcall("ZADD", keys.schedulers, chain[1], schedulerId)
  return chain[1]
end
