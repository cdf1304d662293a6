-- Generated from lua-src/recordMetrics-2.lua by `npm run build:lua`: edit the source, not this file.
--[[
  recordMetrics-2 · add a worker's count of finished jobs (completed or failed) of one minute to
  the queue's per-minute metrics (docs/protocol.md, "Metrics"; BullMQ's getMetrics shape).

  KEYS[1] P:{Q}:metrics:<type>, a hash: count (every job counted), prevTS (the start of the open
          minute, ms, a multiple of 60000), prevCount (count when that minute opened)
       [2] P:{Q}:metrics:<type>:data, a list: the count of each closed minute, the newest first;
          entry i is the minute that started at prevTS - (i + 1) * 60000
  ARGV[1] jobs to add (a whole number >= 1)
       [2] the minute they finished in: its start, ms since the epoch (a multiple of 60000; any
           other time is taken as the minute it falls in)
       [3] maxDataPoints: closed minutes the list keeps (1 to 80640)
  Returns the total count after the call.

  Why a script of its own: the finishing scripts stay as they are (moveToFinished-14 is fixed), so
  a worker with `metrics` counts its finishes in memory and sends each minute's count here, once
  per flush (about every 5 s while it finishes jobs, and at close); a worker without metrics never
  calls it. Several workers write the same keys, each with its own clock and its own rhythm:
  - a minute after prevTS closes the open minute (its count pushed) and one 0 per minute with no
    finish since; a gap longer than the list leaves nothing of the old list in range, so the list
    becomes maxDataPoints zeros (the closed minute's count would sit at the wrong index otherwise);
  - a minute equal to prevTS adds to the open minute;
  - an older one (a flush that arrived after another worker opened a later minute) adds to that
    minute's entry if the list holds it (whatever this caller's maxDataPoints: another worker's
    may be larger and have kept more), and never to the open minute (prevCount grows with it).
    A minute older than the list's oldest entry is counted in `count` only: the list is never
    extended at its old end, so every entry stays at the index of its minute. The list's length
    is the last closing caller's maxDataPoints (its LTRIM): the workers of a queue should share one.
  Bounded: at most maxDataPoints entries pushed (LPUSHes of 1000) and one LTRIM, or one LSET.
]]
local rcall = redis.call
local n = tonumber(ARGV[1])
local MINUTE = 60000
local minute = tonumber(ARGV[2])
minute = minute - (minute % MINUTE)
local maxPoints = tonumber(ARGV[3])

local function pushZeros(list, zeros)
  while zeros > 0 do
    local chunk = math.min(zeros, 1000)
    local batch = {}
    for i = 1, chunk do batch[i] = 0 end
    rcall("LPUSH", list, unpack(batch))
    zeros = zeros - chunk
  end
end

local fields = rcall("HMGET", KEYS[1], "count", "prevTS", "prevCount")
local count = tonumber(fields[1]) or 0
local prevTS = tonumber(fields[2])
local prevCount = tonumber(fields[3]) or count

if prevTS == nil or minute > prevTS then
  if prevTS ~= nil then
    local gap = math.floor((minute - prevTS) / MINUTE) -- >= 1: minutes closing, the open one included
    if gap > maxPoints then
      -- Even the minute closing now is out of range: the whole list is silent minutes.
      rcall("DEL", KEYS[2])
      pushZeros(KEYS[2], maxPoints)
    else
      rcall("LPUSH", KEYS[2], count - prevCount)
      pushZeros(KEYS[2], gap - 1)
      rcall("LTRIM", KEYS[2], 0, maxPoints - 1)
    end
  end
  rcall("HSET", KEYS[1], "prevTS", minute, "prevCount", count)
elseif minute < prevTS then
  local index = math.floor((prevTS - minute) / MINUTE) - 1
  -- The list's length alone decides: a caller with a smaller maxDataPoints than the writer that
  -- trimmed the list still places its count in an entry the list holds (never beyond its end).
  if index < rcall("LLEN", KEYS[2]) then
    local held = tonumber(rcall("LINDEX", KEYS[2], index)) or 0
    rcall("LSET", KEYS[2], index, held + n)
  end
  rcall("HINCRBY", KEYS[1], "prevCount", n)
end
return rcall("HINCRBY", KEYS[1], "count", n)
