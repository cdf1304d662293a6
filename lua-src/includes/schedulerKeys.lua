-- schedulerKeys(): the keys table of the job scheduler scripts (upsertJobScheduler-10,
-- startSchedulerJob-14, repairJobScheduler-12), read from KEYS[1..10] in this order: [1] repeat (zset: scheduler id ->
-- the slot of its next job, ms) [2] the scheduler's hash P:{Q}:repeat:<id> [3] wait [4] paused
-- [5] meta [6] delayed [7] prioritized [8] pc [9] marker [10] events. The TypeScript side lists
-- the same order once (SCHEDULER_KEYS in lib/protocol/scheduler-scripts.ts).
local function schedulerKeys()
  return {
    schedulers = KEYS[1], scheduler = KEYS[2], wait = KEYS[3], paused = KEYS[4], meta = KEYS[5],
    delayed = KEYS[6], prioritized = KEYS[7], pc = KEYS[8], marker = KEYS[9], events = KEYS[10]
  }
end
