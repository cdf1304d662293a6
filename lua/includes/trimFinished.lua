-- @include removeJobKeys
-- trimFinished(setKey, prefix, now, keepCount, keepAgeMs): the removeOnComplete / removeOnFail rule.
-- keepCount < 0 keeps every job; otherwise only the newest keepCount stay. keepAgeMs > 0 also drops
-- jobs that finished more than keepAgeMs ago (at most 1000 a call, so one call stays short).
local function trimFinished(setKey, prefix, now, keepCount, keepAgeMs)
  now = tonumber(now)
  local doomed = {}
  if keepAgeMs > 0 then
    doomed = rcall("ZRANGEBYSCORE", setKey, 0, now - keepAgeMs, "LIMIT", 0, 1000)
  end
  if keepCount >= 0 then
    local extra = rcall("ZRANGE", setKey, 0, -(keepCount + 1))
    for _, jobId in ipairs(extra) do doomed[#doomed + 1] = jobId end
  end
  for _, jobId in ipairs(doomed) do
    rcall("ZREM", setKey, jobId)
    removeJobKeys(prefix .. jobId)
  end
end
