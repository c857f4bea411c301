// Progress resets the run job's stalled count (docs/reliability.md "Workers lost many times").
// BullMQ 6.7's stalled-job check (moveStalledJobsToWait-9.lua) adds 1 to the job hash's `stc`
// field each time it finds the job's lock gone, and fails the job once `stc` passes the
// worker's `maxStalledCount`; nothing in BullMQ lowers `stc` again, so a run killed four times
// over days failed however far apart the losses were. The step-commit and checkpoint scripts
// set `stc` back to 0 in the same atomic write as the progress: the cap then counts only the
// losses without a committed step or checkpoint in between.
/** Lua: `progressed()` sets the run job's stalled count to 0 (when the job has one). KEYS[1]
 * is the run hash; ARGV[arg], ARGV[arg + 1] the runJobKeyParts of run-job-key.ts ('' = leave it). */
export const PROGRESS_LUA = (arg: number) => `
local function progressed()
  if ARGV[${arg}] == '' then return end
  local pool = redis.call('HGET', KEYS[1], 'pool')
  if not pool then return end
  local job = ARGV[${arg}] .. pool .. ARGV[${arg + 1}]
  if redis.call('HEXISTS', job, 'stc') == 1 then redis.call('HSET', job, 'stc', '0') end
end
`;
