-- pickupKeys(): the keys table of pickup() and takeNextJobs(), read from KEYS[1..11], the fixed
-- order of the eleven pickup KEYS that moveToActive-11, moveToFinished-14 and finishJobs-13 open
-- with: [1] wait [2] active [3] prioritized [4] events [5] stalled [6] limiter [7] delayed
-- [8] paused [9] meta [10] pc [11] marker. Written once here (the TypeScript side builds the same
-- order from PICKUP_KEYS in lib/protocol/scripts.ts; a test compares the two).
local function pickupKeys()
  return {
    wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4], stalled = KEYS[5],
    limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8], meta = KEYS[9], pc = KEYS[10],
    marker = KEYS[11]
  }
end
