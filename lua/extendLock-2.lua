-- Generated from lua-src/extendLock-2.lua by `npm run build:lua`: edit the source, not this file.
-- extendLock-2.lua · KEYS[1] lock, KEYS[2] stalled · ARGV token, duration-ms, jobid
-- The seed's heartbeat, normative and unchanged: re-set the lock's TTL only while the token still
-- holds it, and take the job off the stalled set. Returns 1 when renewed, 0 when the token no
-- longer matches (the lock lapsed or another worker holds it); then nothing changes.
local rcall = redis.call
if rcall("GET", KEYS[1]) == ARGV[1] then
  if rcall("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) then
    rcall("SREM", KEYS[2], ARGV[3])
    return 1
  end
end
return 0
