// Lua scripts of the guardrails (guardrails.ts): a firing recorded once, the safe checkpoint, and
// a rollback as one atomic step (steps taken back, checkpoint pointer moved back, counters).
// The fence is scripts.ts's FENCE: ARGV[1] is the writer's attempt in every script here.
import { FENCE } from './fence-script.ts';
import { METER_LUA } from './usage-scripts.ts';

/** Rebuilds the run hash's `guardrailFirings` (a JSON array) from the capped firing list. */
const PUSH_FIRINGS = `
for i = 1, #firings do redis.call('RPUSH', KEYS[3], firings[i]) end
redis.call('LTRIM', KEYS[3], -tonumber(ARGV[6]), -1)
redis.call('HSET', KEYS[1], 'guardrailFirings',
  '[' .. table.concat(redis.call('LRANGE', KEYS[3], 0, -1), ',') .. ']')
local ids = {}
for i = 1, #events do
  ids[#ids + 1] = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'event', events[i])
end
`;

/** KEYS: run, events, firings, firingKeys, then METER_LUA's (usage-scripts.ts). ARGV: fence,
 * key, firingsJson (array of JSON text), eventsJson (same), maxLen, kept, then METER_LUA's (the
 * usage of a step that fired a stop: sampled and trained, never committed). \`key\`
 * (generation:step) makes a re-sent or re-run firing a no-op (\`duplicate\`), its usage metered
 * once. */
const RECORD_FIRINGS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
${FENCE(1)}
if redis.call('HSETNX', KEYS[4], ARGV[2], '1') == 0 then return {'duplicate'} end
${METER_LUA(5, 7)}
meter()
local firings = cjson.decode(ARGV[3])
local events = cjson.decode(ARGV[4])
${PUSH_FIRINGS}
return {'recorded', ids[#ids] or ''}
`;

/** KEYS: run. ARGV: fence, step, path ('' = the starting weights). */
const SET_SAFE_CHECKPOINT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
${FENCE(1)}
redis.call('HSET', KEYS[1], 'safeCheckpointStep', ARGV[2], 'safeCheckpointPath', ARGV[3])
return {'saved'}
`;

/**
 * KEYS: run, events, firings, firingKeys, steps, stepIndex, rolledBack, transitions, then
 * METER_LUA's (usage-scripts.ts).
 * ARGV: fence, key, firingJson, eventJson, maxLen, kept, toStep, toPath ('' = starting weights),
 * rollback (n: the rollbacks after this one), learningRateScale, firedStep, firedRecordJson,
 * metaJson (the rolledBack marker of the taken-back steps), nowIso, transitionJson, then
 * METER_LUA's: the usage of the step that fired (sampled and trained, never committed) is
 * metered with the rollback, so once (a re-sent rollback is a \`duplicate\`).
 * Every committed step above toStep moves to the rolledBack hash (field step:n) with the marker
 * spliced in, never deleted; the step that fired goes there too; the checkpoint pointer moves
 * back to toStep (the one write that lowers it) and lastStep with it.
 */
const ROLLBACK = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
${FENCE(1)}
if state ~= 'running' then return {'not-running', state} end
local rollbacks = tonumber(redis.call('HGET', KEYS[1], 'rollbacks') or '0')
if rollbacks >= tonumber(ARGV[9]) then return {'duplicate'} end
if rollbacks ~= tonumber(ARGV[9]) - 1 then return {'stale', tostring(rollbacks)} end
${METER_LUA(9, 16)}
meter()
redis.call('HSETNX', KEYS[4], ARGV[2], '1')
local n = ARGV[9]
local taken = redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. ARGV[7], '+inf')
for _, step in ipairs(taken) do
  local record = redis.call('HGET', KEYS[5], step)
  if record then
    redis.call('HSET', KEYS[7], step .. ':' .. n, string.sub(record, 1, -2) .. ',"rolledBack":' .. ARGV[13] .. '}')
    redis.call('HDEL', KEYS[5], step)
  end
  redis.call('ZREM', KEYS[6], step)
end
redis.call('HSET', KEYS[7], ARGV[11] .. ':' .. n .. ':fired', ARGV[12])
if ARGV[8] == '' then
  redis.call('HDEL', KEYS[1], 'checkpointStep', 'checkpointPath', 'checkpointAt')
else
  redis.call('HSET', KEYS[1], 'checkpointStep', ARGV[7], 'checkpointPath', ARGV[8], 'checkpointAt', ARGV[14])
end
if tonumber(ARGV[7]) > 0 then redis.call('HSET', KEYS[1], 'lastStep', ARGV[7])
else redis.call('HDEL', KEYS[1], 'lastStep') end
redis.call('HSET', KEYS[1], 'rollbacks', n, 'learningRateScale', ARGV[10],
  'safeCheckpointStep', ARGV[7], 'safeCheckpointPath', ARGV[8], 'updatedAt', ARGV[14])
redis.call('RPUSH', KEYS[8], ARGV[15])
local firings = {ARGV[3]}
local events = {ARGV[4]}
${PUSH_FIRINGS}
return {'rolled-back', ids[1], cjson.encode(taken)}
`;

export const GUARDRAIL_SCRIPTS = {
  annealRecordFirings: { numberOfKeys: 8, lua: RECORD_FIRINGS },
  annealSetSafeCheckpoint: { numberOfKeys: 1, lua: SET_SAFE_CHECKPOINT },
  annealRollback: { numberOfKeys: 12, lua: ROLLBACK },
} as const;
