--[[
  recordMetrics-2 · add a worker's count of finished jobs (completed or failed) of one minute to
  the queue's per-minute metrics (docs/protocol.md, "Metrics"; BullMQ's getMetrics shape).

  KEYS[1] P:{Q}:metrics:<type>, a hash: count (every job counted), prevTS (the start of the open
          minute, ms, a multiple of 60000), prevCount (count when that minute opened)
       [2] P:{Q}:metrics:<type>:data, a list: the count of each closed minute, the newest first
  ARGV[1] jobs to add (a whole number >= 1)
       [2] the minute they finished in: its start, ms since the epoch, a multiple of 60000
       [3] maxDataPoints: closed minutes the list keeps (1 to 80640)
  Returns the total count after the call.

  Why a script of its own: the finishing scripts stay as they are (moveToFinished-14 is fixed), so
  a worker with `metrics` counts its finishes in memory and sends each minute's count here, once
  per flush (about every 5 s while it finishes jobs, and at close); a worker without metrics never
  calls it. Several workers write the same keys: the one whose minute is newer than prevTS closes
  the open minute (pushing its count, and a 0 per minute with no finish since), a minute equal to
  prevTS adds to the open minute, and an older one (a flush that arrived late) adds to that
  minute's entry of the list if the list still holds it.
  Bounded: at most maxDataPoints entries pushed (in LPUSHes of 1000) and one LTRIM, or one LSET
  at most maxDataPoints deep.
]]
local rcall = redis.call
local n = tonumber(ARGV[1])
local minute = tonumber(ARGV[2])
local maxPoints = tonumber(ARGV[3])
local MINUTE = 60000

local fields = rcall("HMGET", KEYS[1], "count", "prevTS", "prevCount")
local count = tonumber(fields[1]) or 0
local prevTS = tonumber(fields[2])
local prevCount = tonumber(fields[3]) or count

if prevTS == nil or minute > prevTS then
  if prevTS ~= nil then
    -- Close the open minute, then one 0 per minute that passed without a flush.
    local gap = math.floor((minute - prevTS) / MINUTE)
    rcall("LPUSH", KEYS[2], count - prevCount)
    local zeros = math.min(gap - 1, maxPoints)
    while zeros > 0 do
      local chunk = math.min(zeros, 1000)
      local batch = {}
      for i = 1, chunk do batch[i] = 0 end
      rcall("LPUSH", KEYS[2], unpack(batch))
      zeros = zeros - chunk
    end
    rcall("LTRIM", KEYS[2], 0, maxPoints - 1)
  end
  rcall("HSET", KEYS[1], "prevTS", minute, "prevCount", count)
elseif minute < prevTS then
  -- A closed minute: its entry, if still kept; either way not the open minute's.
  local index = math.floor((prevTS - minute) / MINUTE) - 1
  if index < rcall("LLEN", KEYS[2]) then
    local held = tonumber(rcall("LINDEX", KEYS[2], index)) or 0
    rcall("LSET", KEYS[2], index, held + n)
  end
  rcall("HINCRBY", KEYS[1], "prevCount", n)
end
return rcall("HINCRBY", KEYS[1], "count", n)
