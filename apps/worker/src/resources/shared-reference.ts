// A GRPO run's use of its shared reference (docs/operations.md "Shared references"): runs of one
// tenant that start from the same weights score against one reference adapter per inference
// endpoint, named by the control plane at submission (the demand's `reference`) and counted
// once in admission. This is the worker's side:
// - `serve(path)`: the run offers its own export of its starting weights; the store answers with
//   the current generation's adapter name and the path offered first in that generation, and the
//   engine loads that name from that path (a no-op where this process, or another worker, has
//   loaded it already: same name, same files);
// - `leave()` at the end of the attempt: the last run of this process that serves it forgets it
//   without unloading it (other workers' runs may still sample it);
// - `unloadLeftReferences`: unloads the adapters whose last user left `running` (the transition
//   script queues them, on every path that releases slots). A worker runs it after each run it
//   ends and before each run it starts on the endpoint, so an adapter whose last user's worker
//   died is unloaded by the next run on the endpoint, from whichever worker (the queue is in
//   Redis; the name is unloaded wherever a replica lists it).
import type { AdapterDemand } from '@anneal/protocol';
import type { InferenceEngine } from '@anneal/engines';
import type { Rollout } from '@anneal/envs';
import type { SharedReference } from '../executors/types.ts';
import { type StoreContext, claimSharedReference, takeReferenceUnloads } from '@anneal/store';

/** Reference groups a process keeps per shared reference: at 8 rollouts of up to 4,096 tokens
 * (ids 4 bytes a token, the loss mask 1, the decoded text about 4–9 as a JS string — reference
 * rollouts carry no logprobs) about 300–450 MiB at worst, a few MiB for typical lengths;
 * enough for 16 steps of 64 prompts, so the runs of a sweep, which draw the same prompts in
 * the same order, find each other's groups. */
const MAX_SHARED_GROUPS = 1_024;

export interface SharedReferenceUse {
  endpoint: string;
  reference: SharedReference;
  /** The adapter name once served (the only name besides its own a run may sample). */
  adapter(): string | undefined;
  /** This run no longer samples it here. */
  leave(): Promise<void>;
}

/** Per engine (one per endpoint in a process): shared adapters its runs serve, and how many. */
interface ServedHere {
  users: number;
  loaded: Promise<void>;
  groups: Map<string, Promise<Rollout[]>>;
}
const servedHere = new WeakMap<InferenceEngine, Map<string, ServedHere>>();

/** The shared reference of `run` on its inference endpoint; undefined when its demand names
 * none. */
export function sharedReferenceOf(
  store: StoreContext,
  run: { id: string; adapterDemand?: readonly AdapterDemand[] },
  engine: InferenceEngine,
): SharedReferenceUse | undefined {
  const demand = run.adapterDemand?.find((d) => d.role === 'inference' && d.reference);
  const reference = demand?.reference;
  if (demand === undefined || reference === undefined) return undefined;
  const here = servedHere.get(engine) ?? new Map<string, ServedHere>();
  servedHere.set(engine, here);
  let adapter: string | undefined;
  return {
    endpoint: demand.endpoint,
    adapter: () => adapter,
    reference: {
      async serve(path) {
        if (adapter !== undefined) return adapter;
        const claim = { endpoint: demand.endpoint, reference, runId: run.id, path };
        const claimed = await claimSharedReference(store, claim);
        if (claimed === null) {
          throw new Error(
            `run ${run.id}: holds no use of its shared reference on inference endpoint ` +
              `'${demand.endpoint}' (it is no longer running)`,
          );
        }
        let entry = here.get(claimed.adapter);
        if (entry === undefined) {
          const loaded = engine.loadWeights({
            name: claimed.adapter,
            path: claimed.path,
            shared: true,
          });
          const created: ServedHere = { users: 0, loaded, groups: new Map() };
          entry = created;
          here.set(claimed.adapter, created);
          loaded.catch(() => {
            if (here.get(claimed.adapter) === created) here.delete(claimed.adapter);
          });
        }
        await entry.loaded;
        entry.users += 1;
        adapter = claimed.adapter;
        return adapter;
      },
      rollouts(settings) {
        const entry = adapter === undefined ? undefined : here.get(adapter);
        if (entry === undefined)
          throw new Error(`run ${run.id}: its shared reference is not served`);
        const seed = Number.parseInt(reference.slice('ref-'.length, 'ref-'.length + 8), 16);
        return { seed, settings, groups: entry.groups, maxGroups: MAX_SHARED_GROUPS };
      },
    },
    async leave() {
      const name = adapter;
      if (name === undefined) return;
      adapter = undefined;
      const entry = here.get(name);
      if (entry === undefined || --entry.users > 0) return;
      here.delete(name);
      await engine.releaseWeights?.(name, { keepLoaded: true });
    },
  };
}

/** Unloads every shared reference adapter of `endpoint` whose last user left; returns them. */
export async function unloadLeftReferences(
  store: StoreContext,
  endpoint: string,
  engine: InferenceEngine,
): Promise<string[]> {
  const left = await takeReferenceUnloads(store, endpoint);
  for (const { adapter } of left) {
    servedHere.get(engine)?.delete(adapter);
    await engine.releaseWeights?.(adapter, { shared: true });
  }
  return left.map((l) => l.adapter);
}
