// Lua scripts that make multi-key updates atomic (run creation, state transitions, step
// commits, checkpoint pointers). Defined once per ioredis client with defineCommand, so
// ioredis caches them (EVALSHA with an EVAL fallback).
import type { Redis } from 'ioredis';
import { RUN_TRANSITIONS, TERMINAL_STATES } from '@anneal/protocol';
import { FENCE } from './fence-script.ts';
import { BUDGET_AT_START, METER_LUA, METER_SLOT } from './usage-scripts.ts';
import { PROGRESS_LUA } from './progress-script.ts';
import { GUARDRAIL_SCRIPTS } from './guardrail-scripts.ts';
import { ADAPTER_DEMAND, ADMIT_ADAPTERS, MOVE_ADAPTERS } from './adapter-slots-script.ts';
import { FAIR_ACQUIRE, FAIR_RELEASE, FAIR_RENEW } from './fair-share-script.ts';
import { SHARED_REFERENCE_SCRIPTS } from './shared-reference-scripts.ts';
import {
  INDEX_CHECKPOINTS,
  PROTECT_CHECKPOINT,
  RETIRE_CHECKPOINT,
  SET_CHECKPOINT,
  USE_CHECKPOINT,
} from './checkpoint-scripts.ts';

const luaJson = (value: unknown) => JSON.stringify(JSON.stringify(value));

/** Length cap (approximate) of the transition log stream. */
export const TRANSITION_LOG_MAX_LEN = 10_000;

/** KEYS: run, transitions, events, tenantRuns, poolWaiting, idempotency, runCounts, transitionLog,
 * outbox.
 * ARGV: runId, nowMs, transitionJson, eventJson, useIdem, idemValue, idemTtl, maxLen, field/value… */
const CREATE_RUN = `
if ARGV[5] == '1' then
  local existing = redis.call('GET', KEYS[6])
  if existing then return {'existing', existing} end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'duplicate'} end
local fields = {}
for i = 9, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '*', 'event', ARGV[4])
redis.call('ZADD', KEYS[4], 0, ARGV[1])
redis.call('ZADD', KEYS[5], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[9], ARGV[2], ARGV[1])
if ARGV[5] == '1' then redis.call('SET', KEYS[6], ARGV[6], 'EX', ARGV[7]) end
local kind = redis.call('HGET', KEYS[1], 'kind') or '?'
redis.call('HINCRBY', KEYS[7], 'queued/' .. kind, 1)
redis.call('XADD', KEYS[8], 'MAXLEN', '~', ${TRANSITION_LOG_MAX_LEN}, '*', 'runId', ARGV[1], 'kind', kind,
  'pool', redis.call('HGET', KEYS[1], 'pool') or '?', 'to', 'queued')
return {'created', ARGV[1]}
`;

/** KEYS: sweep, tenantSweeps, idempotency. ARGV: sweepId, recordJson, useIdem, idemValue, idemTtl.
 * The record and the Idempotency-Key together: a replay finds the sweep, never half of one. */
const CREATE_SWEEP = `
if ARGV[3] == '1' then
  local existing = redis.call('GET', KEYS[3])
  if existing then return {'existing', existing} end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'duplicate'} end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
if ARGV[3] == '1' then redis.call('SET', KEYS[3], ARGV[4], 'EX', ARGV[5]) end
return {'created', ARGV[1]}
`;

/** KEYS: run, transitions, events, tenantRunning, tenantLimits, poolWaiting, runCounts,
 * transitionLog. ARGV: to, expectedFromCsv, reason, workerId, nowIso, nowMs, runId, maxLen,
 * guardJson, derivePrefix, by, field/value… (`by`: what paused the run, on a transition to
 * `paused`; '' = none). A caller that does not know the run's tenant and pool
 * passes the store prefix as derivePrefix (and the run key in KEYS 4-6, to stay in its slot):
 * the script names those three keys from the hash, as \`keys()\` does, sparing a lookup round
 * trip; every key carries the prefix's hash tag, so they share the declared keys' slot.
 * Entering `running` logs how long the run waited (poolWaiting score = since). The guard ('' = none) adds compare-and-set conditions: `attempt` must be the run's,
 * `absentKey` (a worker's heartbeat record, same hash tag) must not exist, and `stepIndex` (the
 * run's step index) must hold steps 1..n without a hole, n = `steps` when given (else
 * `incomplete`, count, highest); `present` names a hash field that must exist (a pause the
 * worker acts on must not have been withdrawn by a resume). A paused run waits on nothing: it
 * leaves the pool's waiting set, and re-enters it when a resume queues it; its `pause` field
 * (the cause) goes when it leaves `paused` or ends. Entering `running`
 * also replies with the run hash as the transition left it (field, value…): the starting worker
 * reads its attempt, spec and checkpoint from it instead of three more round trips. With
 * `runUsage` (the run's usage key) in the guard, entering `running` first checks the budgets
 * (BUDGET_AT_START, usage-scripts.ts): a run at its own or its tenant's cap does not start.
 * Then its adapter slots (adapter-slots-script.ts): a run whose demand does not fit an endpoint
 * is `blocked` like one at its tenant's cap; leaving `running` gives its slots back. */
const TRANSITION = `
local allowed = cjson.decode(${luaJson(RUN_TRANSITIONS)})
local terminal = cjson.decode(${luaJson(Object.fromEntries([...TERMINAL_STATES].map((s) => [s, true])))})
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
local tenantRunning, tenantLimits, poolWaiting = KEYS[4], KEYS[5], KEYS[6]
if ARGV[10] ~= '' then
  local owner = redis.call('HMGET', KEYS[1], 'tenant', 'pool')
  if not owner[1] or owner[1] == '' or not owner[2] or owner[2] == '' then return {'missing'} end
  tenantRunning = ARGV[10] .. ':tenant:' .. owner[1] .. ':running'
  tenantLimits = ARGV[10] .. ':tenant:' .. owner[1] .. ':limits'
  poolWaiting = ARGV[10] .. ':pool:' .. owner[2] .. ':waiting'
end
local to = ARGV[1]
if ARGV[2] ~= '' then
  local expected = false
  for s in string.gmatch(ARGV[2], '[^,]+') do
    if s == state then expected = true end
  end
  if not expected then return {'conflict', state} end
end
local guard = {}
if ARGV[9] ~= '' then
  guard = cjson.decode(ARGV[9])
  if guard.attempt and (redis.call('HGET', KEYS[1], 'attempt') or '') ~= guard.attempt then
    return {'conflict', state}
  end
  if guard.absentKey and redis.call('EXISTS', guard.absentKey) == 1 then return {'conflict', state} end
  if guard.present and redis.call('HEXISTS', KEYS[1], guard.present) == 0 then return {'conflict', state} end
  if guard.stepIndex then
    local count = redis.call('ZCARD', guard.stepIndex)
    local top = tonumber(redis.call('ZREVRANGE', guard.stepIndex, 0, 0)[1] or '0')
    local expected = guard.steps or top
    if count ~= expected or top ~= expected then
      return {'incomplete', state, tostring(count), tostring(top)}
    end
  end
end
local legal = false
for _, s in ipairs(allowed[state]) do
  if s == to then legal = true end
end
if not legal then return {'illegal', state} end
local runId = ARGV[7]
${ADAPTER_DEMAND}
if to == 'running' and guard.runUsage and redis.call('SISMEMBER', tenantRunning, runId) == 0 then
  ${BUDGET_AT_START}
end
if to == 'running' and redis.call('SISMEMBER', tenantRunning, runId) == 0 then
  local limit = tonumber(redis.call('HGET', tenantLimits, 'maxConcurrentRuns') or '')
  local running = redis.call('SCARD', tenantRunning)
  if limit and running >= limit then
    local tenant = redis.call('HGET', KEYS[1], 'tenant')
    local reason = "tenant '" .. tenant .. "' is at its limit of " .. limit .. ' concurrently running runs'
    redis.call('HSET', KEYS[1], 'waitingReason', reason)
    return {'blocked', state, reason}
  end
end
${ADMIT_ADAPTERS}
local fields = {'state', to, 'updatedAt', ARGV[5]}
local kind = redis.call('HGET', KEYS[1], 'kind') or '?'
local log = {'runId', runId, 'kind', kind, 'pool', redis.call('HGET', KEYS[1], 'pool') or '?', 'to', to}
if to == 'running' then
  local since = redis.call('ZSCORE', poolWaiting, runId)
  if since then
    log[#log + 1] = 'waitedSeconds'
    log[#log + 1] = tostring((tonumber(ARGV[6]) - tonumber(since)) / 1000)
  end
end
redis.call('HINCRBY', KEYS[7], state .. '/' .. kind, -1)
redis.call('HINCRBY', KEYS[7], to .. '/' .. kind, 1)
redis.call('XADD', KEYS[8], 'MAXLEN', '~', ${TRANSITION_LOG_MAX_LEN}, '*', unpack(log))
if to == 'running' then
  redis.call('SADD', tenantRunning, runId)
  redis.call('ZREM', poolWaiting, runId)
  redis.call('HINCRBY', KEYS[1], 'attempt', 1)
  redis.call('HDEL', KEYS[1], 'waitingReason')
  if redis.call('HEXISTS', KEYS[1], 'startedAt') == 0 then
    fields[#fields + 1] = 'startedAt'
    fields[#fields + 1] = ARGV[5]
  end
else
  redis.call('SREM', tenantRunning, runId)
end
${MOVE_ADAPTERS}
if to == 'retrying' or to == 'queued' then redis.call('ZADD', poolWaiting, ARGV[6], runId) end
if to == 'paused' then
  redis.call('ZREM', poolWaiting, runId)
  redis.call('HDEL', KEYS[1], 'waitingReason')
elseif state == 'paused' then
  redis.call('HDEL', KEYS[1], 'pause')
end
if terminal[to] then
  redis.call('ZREM', poolWaiting, runId)
  redis.call('HDEL', KEYS[1], 'waitingReason', 'pause')
  fields[#fields + 1] = 'endedAt'
  fields[#fields + 1] = ARGV[5]
end
if ARGV[4] ~= '' then
  fields[#fields + 1] = 'workerId'
  fields[#fields + 1] = ARGV[4]
end
for i = 12, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
local reason = ARGV[3]
-- A cancel someone asked for (markCancelRequested): its transition carries who asked, and the
-- reason is their own text, whichever process (control plane or worker) ends the run.
local principal = false
if to == 'cancelled' then
  local asked = redis.call('HMGET', KEYS[1], 'cancelPrincipal', 'cancelReason')
  if asked[1] then
    principal = asked[1]
    reason = asked[2] or reason
  end
end
local transition = {from = state, to = to, at = ARGV[5], reason = reason}
if ARGV[4] ~= '' then transition.workerId = ARGV[4] end
if ARGV[11] ~= '' then transition.by = ARGV[11] end
if principal then transition.principal = principal end
redis.call('RPUSH', KEYS[2], cjson.encode(transition))
local event = {type = 'run:state', runId = runId, from = state, to = to, reason = reason, at = ARGV[5]}
if ARGV[11] ~= '' then event.by = ARGV[11] end
if principal then event.principal = principal end
local id = redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '*', 'event', cjson.encode(event))
if to == 'running' then return {'ok', state, id, unpack(redis.call('HGETALL', KEYS[1]))} end
return {'ok', state, id}
`;

/** KEYS: run, steps, stepIndex, events, then METER_LUA's (usage-scripts.ts). ARGV: step,
 * recordJson, eventJson, maxLen, nowIso, fence, previous, then METER_LUA's, then PROGRESS_LUA's
 * (progress-script.ts: a first commit resets the run job's stalled count): the step's usage is
 * metered with its first commit only, and the reply says whether a budget cap is reached.
 * \`previous\` ('' = none): a step the writer committed (or resumed after) before this
 * one; when the run has no record of it, Redis lost acknowledged steps (a failover promoted a
 * replica that lacked them) and the write is refused as a \`gap\`, naming the highest step left,
 * so the writer resumes from what Redis holds instead of leaving a hole in the history. */
const APPEND_STEP = `
${METER_LUA(5, 8)}
${PROGRESS_LUA(13)}
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
${FENCE(6)}
if state ~= 'running' then return {'not-running', state} end
if ARGV[7] ~= '' and redis.call('HEXISTS', KEYS[2], ARGV[7]) == 0 then
  local top = redis.call('ZREVRANGE', KEYS[3], 0, 0)
  return {'gap', top[1] or ''}
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return {'duplicate'} end
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[1])
local id = redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], '*', 'event', ARGV[3])
local last = tonumber(redis.call('HGET', KEYS[1], 'lastStep') or '-1')
if tonumber(ARGV[1]) > last then redis.call('HSET', KEYS[1], 'lastStep', ARGV[1]) end
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[5])
progressed()
meter()
local over = meter_over()
return {'committed', id, over[1], over[2], over[3]}
`;

/** A pause asked for while the run runs (its worker pauses it at the next step boundary).
 * KEYS: run. ARGV: pauseJson, fence ('' = unfenced: the control plane). Sets the run's `pause`
 * field only while it is `running` (a worker's request: in the worker's attempt); the first
 * request wins, a repeat is a no-op. Reply: {'requested'} | {'pending', pauseJson} |
 * {'state', state} (not running) | {'fenced'} | {'missing'}. */
const REQUEST_PAUSE = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
if state ~= 'running' then return {'state', state} end
if ARGV[2] ~= '' and (redis.call('HGET', KEYS[1], 'attempt') or '') ~= ARGV[2] then return {'fenced'} end
local pending = redis.call('HGET', KEYS[1], 'pause')
if pending then return {'pending', pending} end
redis.call('HSET', KEYS[1], 'pause', ARGV[1])
return {'requested'}
`;

/** A resume of a run that has not paused yet: withdraws its pending pause. KEYS: run.
 * Reply: {'withdrawn' | 'none', state} while it runs or waits to run again, else {'state', state}
 * (paused or ended: the caller transitions it) | {'missing'}. */
const WITHDRAW_PAUSE = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
if state ~= 'running' and state ~= 'retrying' then return {'state', state} end
if redis.call('HDEL', KEYS[1], 'pause') == 1 then return {'withdrawn', state} end
return {'none', state}
`;

/**
 * One round trip for GET /v1/runs/{id}: the run hash, its transitions and, for a waiting run,
 * what it waits on. KEYS: run, transitions, tenantRunning, tenantLimits.
 * ARGV: prefix, withTransitions, minHeartbeatMs. The pool's worker index key is derived from the
 * run's pool; it carries the same hash tag as the declared keys, so it lives in their slot.
 * Reply: {hashFlat, transitions, running, cap, onlineWorkers} (last three '' when not waiting).
 */
const RUN_VIEW = `
local hash = redis.call('HGETALL', KEYS[1])
if #hash == 0 then return {} end
local transitions = {}
if ARGV[2] == '1' then transitions = redis.call('LRANGE', KEYS[2], 0, -1) end
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'queued' and state ~= 'retrying' then return {hash, transitions, '', '', ''} end
local pool = redis.call('HGET', KEYS[1], 'pool')
local online = redis.call('ZCOUNT', ARGV[1] .. ':pool:' .. pool .. ':workers', ARGV[3], '+inf')
local running = redis.call('SCARD', KEYS[3])
local cap = redis.call('HGET', KEYS[4], 'maxConcurrentRuns') or ''
return {hash, transitions, tostring(running), cap, tostring(online)}
`;

export const SCRIPTS = {
  ...GUARDRAIL_SCRIPTS,
  ...SHARED_REFERENCE_SCRIPTS,
  annealCreateRun: { numberOfKeys: 9, lua: CREATE_RUN },
  annealCreateSweep: { numberOfKeys: 3, lua: CREATE_SWEEP },
  annealRunView: { numberOfKeys: 4, lua: RUN_VIEW },
  annealTransition: { numberOfKeys: 8, lua: TRANSITION },
  annealAppendStep: { numberOfKeys: 8, lua: APPEND_STEP },
  annealMeterSlot: { numberOfKeys: 5, lua: METER_SLOT },
  annealSetCheckpoint: { numberOfKeys: 6, lua: SET_CHECKPOINT },
  annealIndexCheckpoints: { numberOfKeys: 3, lua: INDEX_CHECKPOINTS },
  annealUseCheckpoint: { numberOfKeys: 3, lua: USE_CHECKPOINT },
  annealRetireCheckpoint: { numberOfKeys: 5, lua: RETIRE_CHECKPOINT },
  annealProtectCheckpoint: { numberOfKeys: 1, lua: PROTECT_CHECKPOINT },
  annealRequestPause: { numberOfKeys: 1, lua: REQUEST_PAUSE },
  annealWithdrawPause: { numberOfKeys: 1, lua: WITHDRAW_PAUSE },
  annealFairAcquire: { numberOfKeys: 6, lua: FAIR_ACQUIRE },
  annealFairRelease: { numberOfKeys: 8, lua: FAIR_RELEASE },
  annealFairRenew: { numberOfKeys: 2, lua: FAIR_RENEW },
} as const;

export type ScriptName = keyof typeof SCRIPTS;

const defined = new WeakSet<Redis>();

export function defineScripts(redis: Redis): void {
  if (defined.has(redis)) return;
  for (const [name, script] of Object.entries(SCRIPTS)) redis.defineCommand(name, script);
  defined.add(redis);
}

/** Runs one of the scripts above; the reply is a flat array of strings. */
export async function runScript(
  redis: Redis,
  name: ScriptName,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
): Promise<string[]> {
  defineScripts(redis);
  const command = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name];
  if (!command) throw new Error(`script ${name} is not defined on this client`);
  const reply = await command.call(redis, ...keys, ...args.map(String));
  return (reply as unknown[]).map((v) => String(v));
}

/** Like runScript, for scripts whose reply nests arrays. */
export async function runScriptRaw(
  redis: Redis,
  name: ScriptName,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
): Promise<unknown[]> {
  defineScripts(redis);
  const command = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name];
  if (!command) throw new Error(`script ${name} is not defined on this client`);
  return (await command.call(redis, ...keys, ...args.map(String))) as unknown[];
}

/** Stream length cap per run (approximate trimming). */
export const EVENTS_MAX_LEN = 100_000;
