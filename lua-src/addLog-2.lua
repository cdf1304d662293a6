--[[
  addLog-2 · append a line to a job's log.

  KEYS[1] the job's hash  [2] the job's logs list
  ARGV[1] the line  [2] keep at most this many newest lines (0 = all)
  Returns the number of lines kept, or -1 when the job does not exist (nothing written).
]]
local rcall = redis.call
if rcall("EXISTS", KEYS[1]) == 0 then return -1 end
local count = rcall("RPUSH", KEYS[2], ARGV[1])
local keep = tonumber(ARGV[2])
if keep > 0 and count > keep then
  rcall("LTRIM", KEYS[2], tostring(-keep), "-1") -- the newest keep lines
  return keep
end
return count
