// GET /v1/runs/{id} in one round trip: the run, its history and what a waiting run waits on.
import type { RunResource, Transition } from '@anneal/protocol';
import { DEFAULT_WORKER_TTL_SECONDS } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { runFromHash } from './run-record.ts';
import { runScriptRaw } from './scripts.ts';

export interface WaitingFacts {
  /** Workers of the run's pool with a fresh heartbeat. */
  onlineWorkers: number;
  /** The tenant's runs in state running. */
  tenantRunning: number;
  /** The tenant's cap, null when none is set. */
  tenantCap: number | null;
}

export interface RunView {
  run: RunResource;
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
  const reply = await runScriptRaw(
    ctx.redis,
    'annealRunView',
    [
      k.run(runId),
      k.transitions(runId),
      k.tenantRunning(options.tenant),
      k.tenantLimits(options.tenant),
    ],
    [ctx.prefix, options.transitions === false ? '0' : '1', since],
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
  const transitions =
    options.transitions === false ? undefined : history.map((t) => JSON.parse(t) as Transition);
  const run = runFromHash(hash, transitions);
  if (!run || run.tenant !== options.tenant) return null;
  const waiting =
    running === ''
      ? null
      : {
          onlineWorkers: Number(online),
          tenantRunning: Number(running),
          tenantCap: cap === '' ? null : Number(cap),
        };
  return { run, waiting };
}
