// Lua of the shared references (shared-references.ts; the slots and user sets are kept by the
// transition script, adapter-slots-script.ts).

/** KEYS: the reference hash, its users set. ARGV: run id, path of the export it offers.
 * The first user of a generation to offer a path sets it; every user reads the one set.
 * Reply: {'ok', generation, path} or {'not-a-user'} (the run does not hold the reference). */
const CLAIM_SHARED_REFERENCE = `
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return {'not-a-user'} end
redis.call('HSETNX', KEYS[1], 'path', ARGV[2])
local ref = redis.call('HMGET', KEYS[1], 'generation', 'path')
return {'ok', ref[1], ref[2]}
`;

/** KEYS: an endpoint's `:reference-unloads` hash. Takes every entry (adapter name -> path) in
 * one step, so two workers never both unload one. Reply: flat {adapter, path, …}. */
const TAKE_REFERENCE_UNLOADS = `
local flat = redis.call('HGETALL', KEYS[1])
if #flat > 0 then redis.call('DEL', KEYS[1]) end
return flat
`;

export const SHARED_REFERENCE_SCRIPTS = {
  annealClaimSharedReference: { numberOfKeys: 2, lua: CLAIM_SHARED_REFERENCE },
  annealTakeReferenceUnloads: { numberOfKeys: 1, lua: TAKE_REFERENCE_UNLOADS },
} as const;
