// Shared references (docs/operations.md "Shared references"): GRPO runs of one tenant that start
// from the same weights score against one reference adapter per inference endpoint. The
// transition script (adapter-slots-script.ts) keeps who uses it and its one slot; these are the
// calls around it:
// - at submission, the reference id of (tenant, starting weights): drawn at random once and
//   kept, so it is the same for every run of that start and unguessable by other tenants;
// - when a run sets up, its worker offers the path of its reference export and gets the
//   adapter name and path of the current generation (the first offer of a generation wins: all
//   users load the same name from the same files, so vLLM holds it once);
// - when the last user leaves `running` (succeeds, fails, is cancelled, paused, handed back or
//   loses its worker) the script queues the generation's adapter for unloading; a worker of
//   that endpoint takes the queue (after each run it ends, and before each run it starts, so
//   a generation left by a crashed worker is unloaded by the next run on the endpoint).
import { createHash, randomBytes } from 'node:crypto';
import { type StoreContext, keys } from './context.ts';
import { runScript } from './scripts.ts';

/** The reference id of `startKey` (protocol `sharedReferenceKey`) for `tenant`. */
export async function sharedReferenceId(
  ctx: StoreContext,
  tenant: string,
  startKey: string,
): Promise<string> {
  const key = keys(ctx.prefix).sharedReferenceIds(tenant);
  const field = createHash('sha256').update(startKey).digest('hex');
  await ctx.redis.hsetnx(key, field, `ref-${randomBytes(8).toString('hex')}`);
  const id = await ctx.redis.hget(key, field);
  if (id === null) throw new Error(`shared reference id of tenant '${tenant}' vanished`);
  return id;
}

/** The vLLM adapter name of one generation of a shared reference. */
export const sharedReferenceAdapter = (reference: string, generation: number | string) =>
  `${reference}@shared.${generation}`;

function referenceKeys(ctx: StoreContext, endpoint: string, reference: string) {
  const base = `${keys(ctx.prefix).endpointSlots('inference', endpoint)}:reference:${reference}`;
  return { hash: base, users: `${base}:users` };
}

/** What `runId` (a running user of `reference` on `endpoint`) loads: the current generation's
 * adapter name and the path offered first in it (`path` when this offer is the first). Null
 * when the run holds no use of the reference (it is not running). */
export async function claimSharedReference(
  ctx: StoreContext,
  claim: { endpoint: string; reference: string; runId: string; path: string },
): Promise<{ adapter: string; path: string } | null> {
  const k = referenceKeys(ctx, claim.endpoint, claim.reference);
  const [status, generation = '', path = ''] = await runScript(
    ctx.redis,
    'annealClaimSharedReference',
    [k.hash, k.users],
    [claim.runId, claim.path],
  );
  if (status !== 'ok') return null;
  return { adapter: sharedReferenceAdapter(claim.reference, generation), path };
}

/** Running runs that use `reference` on `endpoint`. */
export async function sharedReferenceUsers(
  ctx: StoreContext,
  endpoint: string,
  reference: string,
): Promise<string[]> {
  return (await ctx.redis.smembers(referenceKeys(ctx, endpoint, reference).users)).sort();
}

/** Takes the shared reference adapters of `endpoint` whose last user left, for the caller to
 * unload (adapter name -> path; the path is '' when no user got as far as loading it). */
export async function takeReferenceUnloads(
  ctx: StoreContext,
  endpoint: string,
): Promise<Array<{ adapter: string; path: string }>> {
  const flat = await runScript(
    ctx.redis,
    'annealTakeReferenceUnloads',
    [`${keys(ctx.prefix).endpointSlots('inference', endpoint)}:reference-unloads`],
    [],
  );
  const taken: Array<{ adapter: string; path: string }> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    taken.push({ adapter: flat[i] as string, path: flat[i + 1] as string });
  }
  return taken;
}
