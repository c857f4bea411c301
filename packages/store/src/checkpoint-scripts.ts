// Lua scripts of the checkpoint catalogue (checkpoints.ts): recording a checkpoint (the resume
// pointer and its catalogue entry in one step), a fork taking a use of a source checkpoint, and
// retention retiring one. Retiring and taking a use are atomic with each other, so a checkpoint a
// new run starts from is never deleted between the submission's check and its use.
import { TERMINAL_STATES } from '@anneal/protocol';
import { FENCE } from './fence-script.ts';
import { PROGRESS_LUA } from './progress-script.ts';

const luaJson = (value: unknown) => JSON.stringify(JSON.stringify(value));

/** The catalogue's step indexes, sorted sets scored by step: `kept` and `deleted` (what paged
 * reads range over). A catalogue whose indexes do not count its entries (written before they
 * existed, or by a worker of an older release during an upgrade) is indexed again from the hash
 * by the first script that touches it (and its deleted entries compacted); O(1) otherwise. */
const ENSURE_INDEX = `
local function compact(entry)
  return cjson.encode({step = entry.step, at = entry.at, path = entry.path, samplerPath = entry.samplerPath, deletedAt = entry.deletedAt})
end
local function ensureIndex(catalogue, kept, deleted)
  if redis.call('HLEN', catalogue) == redis.call('ZCARD', kept) + redis.call('ZCARD', deleted) then
    return
  end
  local all = redis.call('HGETALL', catalogue)
  for i = 1, #all, 2 do
    local entry = cjson.decode(all[i + 1])
    if entry.deletedAt then
      redis.call('ZREM', kept, all[i])
      redis.call('ZADD', deleted, tonumber(all[i]), all[i])
      redis.call('HSET', catalogue, all[i], compact(entry))
    else
      redis.call('ZREM', deleted, all[i])
      redis.call('ZADD', kept, tonumber(all[i]), all[i])
    end
  end
end
`;

/** KEYS: catalogue, kept, deleted. Indexes a catalogue written before the indexes existed. */
export const INDEX_CHECKPOINTS = `
${ENSURE_INDEX}
ensureIndex(KEYS[1], KEYS[2], KEYS[3])
return {'ok'}
`;

/** KEYS: run, events, steps, catalogue, kept, deleted. ARGV: step, path, atIso, eventJson, maxLen, fence,
 * requireStep, entryJson, then PROGRESS_LUA's (a new pointer resets the run job's stalled
 * count, progress-script.ts). Never moves backwards; the same pointer again is a no-op (no second
 * event: a write re-sent after a reconnect). \`requireStep\` = '1': only at a committed step (a
 * pointer past the step history would resume a run after steps Redis no longer has). The
 * catalogue entry is written with the pointer, so every resume point is catalogued. */
export const SET_CHECKPOINT = `
${PROGRESS_LUA(9)}
${ENSURE_INDEX}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
${FENCE(6)}
local current = tonumber(redis.call('HGET', KEYS[1], 'checkpointStep') or '-1')
if tonumber(ARGV[1]) < current then return {'stale', tostring(current)} end
if tonumber(ARGV[1]) == current and redis.call('HGET', KEYS[1], 'checkpointPath') == ARGV[2] then
  return {'saved', ''}
end
if ARGV[7] == '1' and redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then return {'uncommitted'} end
redis.call('HSET', KEYS[1], 'checkpointStep', ARGV[1], 'checkpointPath', ARGV[2], 'checkpointAt', ARGV[3])
-- Checked before the new entry is written: after it, the hash counts one entry the indexes do
-- not (yet), and every checkpoint would index the whole catalogue again (O(entries) a write).
ensureIndex(KEYS[4], KEYS[5], KEYS[6])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[8])
redis.call('ZADD', KEYS[5], tonumber(ARGV[1]), ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
progressed()
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'event', ARGV[4])
return {'saved', id}
`;

/** Whether a use of a checkpoint still needs it: the using run is not over and has no checkpoint
 * of its own yet (a retry would start from the source again). A use whose run does not exist
 * yet is a submission in flight: it counts until \`pendingMs\` after it was taken. */
const USE_IS_LIVE = `
local terminal = cjson.decode(${luaJson(Object.fromEntries([...TERMINAL_STATES].map((s) => [s, true])))})
local function useIsLive(prefix, user, use, nowMs, pendingMs)
  local fields = redis.call('HMGET', prefix .. ':run:' .. user, 'state', 'checkpointStep')
  if not fields[1] then return nowMs - tonumber(use.atMs) < pendingMs end
  return not terminal[fields[1]] and not fields[2]
end
`;

/** KEYS: sourceRun, catalogue, uses. ARGV: step, userRunId, tenant, nowMs. A fork takes a use of
 * its source checkpoint before its run is created. Reply: {'ok'} | {'missing'} (no such run in
 * the tenant) | {'unknown'} | {'deleted'}. */
export const USE_CHECKPOINT = `
if redis.call('HGET', KEYS[1], 'tenant') ~= ARGV[3] then return {'missing'} end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return {'unknown'} end
if cjson.decode(raw).deletedAt then return {'deleted'} end
redis.call('HSET', KEYS[3], ARGV[2], cjson.encode({step = tonumber(ARGV[1]), atMs = tonumber(ARGV[4])}))
return {'ok'}
`;

/** KEYS: run, catalogue, uses, kept, deleted. ARGV: step, deletedAtIso, nowMs, prefix, pendingMs,
 * fence. Marks a catalogued checkpoint deleted unless something keeps it: the latest, the guardrails'
 * safe checkpoint (what a rollback restores), a protected one, one a live run starts from. Reply: {'retired', entry} |
 * {'kept', why} | {'fenced', …} | {'unknown'}. The entry is compacted (step, at, paths, deletedAt)
 * and moves from the kept index to the deleted one; the reply holds it whole. */
export const RETIRE_CHECKPOINT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
${FENCE(6)}
${USE_IS_LIVE}
${ENSURE_INDEX}
ensureIndex(KEYS[2], KEYS[4], KEYS[5])
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return {'unknown'} end
local entry = cjson.decode(raw)
if entry.deletedAt then return {'kept', 'already deleted'} end
if redis.call('HGET', KEYS[1], 'checkpointStep') == ARGV[1] then return {'kept', 'latest'} end
if redis.call('HGET', KEYS[1], 'safeCheckpointStep') == ARGV[1] then
  return {'kept', 'guardrail safe checkpoint'}
end
if entry.protections and #entry.protections > 0 then return {'kept', 'protected'} end
local uses = redis.call('HGETALL', KEYS[3])
for i = 1, #uses, 2 do
  local use = cjson.decode(uses[i + 1])
  if tostring(use.step) == ARGV[1] then
    if useIsLive(ARGV[4], uses[i], use, tonumber(ARGV[3]), tonumber(ARGV[5])) then
      return {'kept', 'used by ' .. uses[i]}
    end
  end
end
entry.deletedAt = ARGV[2]
redis.call('HSET', KEYS[2], ARGV[1], compact(entry))
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], tonumber(ARGV[1]), ARGV[1])
return {'retired', cjson.encode(entry)}
`;

/** KEYS: catalogue. ARGV: step, protectionJson ('' = remove), owner. Adds (replacing the owner's
 * earlier one) or removes a protection. Reply: {'ok'} | {'unknown'} | {'deleted'}. */
export const PROTECT_CHECKPOINT = `
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local entry = cjson.decode(raw)
if entry.deletedAt then return {'deleted'} end
local kept = {}
for _, p in ipairs(entry.protections or {}) do
  if p.owner ~= ARGV[3] then kept[#kept + 1] = p end
end
if ARGV[2] ~= '' then kept[#kept + 1] = cjson.decode(ARGV[2]) end
entry.protections = kept
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
return {'ok'}
`;
