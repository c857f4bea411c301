// GET /v1/runs/{id} in one round trip: the run hash, its history and what a waiting run waits on.
import {
  DEFAULT_WORKER_TTL_SECONDS,
  type RunResource,
  Transition,
  parseStored,
} from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { runFromHash, runJsonFromHash } from './run-record.ts';
import { runScriptRaw } from './scripts.ts';

export interface WaitingFacts {
  /** Workers of the run's pool with a fresh heartbeat. */
  onlineWorkers: number;
  /** The tenant's runs in state running. */
  tenantRunning: number;
  /** The tenant's cap, null when none is set. */
  tenantCap: number | null;
}

/** The stored form; turn it into a resource (`runViewResource`) or JSON (`runViewJson`). */
export interface RunView {
  hash: Record<string, string>;
  /** Transitions as stored (JSON text), oldest first; undefined when not requested. */
  transitionsJson: string[] | undefined;
  /** Present for queued/retrying runs. */
  waiting: WaitingFacts | null;
}

export async function getRunView(
  ctx: StoreContext,
  runId: string,
  options: { tenant: string; transitions?: boolean; workerTtlSeconds?: number; now?: Date },
): Promise<RunView | null> {
  const k = keys(ctx.prefix);
  const ttl = options.workerTtlSeconds ?? DEFAULT_WORKER_TTL_SECONDS;
  const since = (options.now ?? new Date()).getTime() - ttl * 1000;
  const withTransitions = options.transitions !== false;
  const reply = await runScriptRaw(
    ctx.redis,
    'annealRunView',
    [
      k.run(runId),
      k.transitions(runId),
      k.tenantRunning(options.tenant),
      k.tenantLimits(options.tenant),
    ],
    [ctx.prefix, withTransitions ? '1' : '0', since],
  );
  if (reply.length === 0) return null;
  const [flat, history, running, cap, online] = reply as [
    string[],
    string[],
    string,
    string,
    string,
  ];
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i] as string] = flat[i + 1] as string;
  if (hash.tenant !== options.tenant) return null;
  const waiting =
    running === ''
      ? null
      : {
          onlineWorkers: Number(online),
          tenantRunning: Number(running),
          tenantCap: cap === '' ? null : Number(cap),
        };
  return { hash, transitionsJson: withTransitions ? history : undefined, waiting };
}

export function runViewResource(view: RunView): RunResource {
  const source = `run ${view.hash.id ?? '?'} transitions`;
  const transitions = view.transitionsJson?.map((t) => parseStored(Transition, t, source));
  const run = runFromHash(view.hash, transitions);
  if (!run) throw new Error('run view without a run');
  return run;
}

/** The resource as JSON without parsing stored JSON; `waitingReason` fills in when unset. */
export function runViewJson(view: RunView, waitingReason?: string): string {
  const json = runJsonFromHash(view.hash, view.transitionsJson, waitingReason);
  if (json === null) throw new Error('run view without a run');
  return json;
}
