// Atomic run state transitions (one Lua script): legality check against the protocol's
// transition table, tenant concurrency cap on entering `running`, history + event append.
import type { Redis } from 'ioredis';
import type { PauseSource, RunResource, RunState } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { runFromHash } from './run-record.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';

export interface TransitionRequest {
  to: RunState;
  reason: string;
  /** Only transition if the current state is one of these (compare-and-set). */
  from?: readonly RunState[];
  workerId?: string;
  /** Extra hash fields to set with the transition, e.g. `{ error: '…' }`. */
  fields?: Record<string, string>;
  /** More compare-and-set conditions (a failed one is a `conflict`): the run's attempt number,
   * a key (of the same store) that must not exist, a field of the run that must exist, and (`completeSteps`) a step history
   * holding steps 1..n without a hole (n = the number given, else its highest step) — else
   * `incomplete`. */
  guard?: {
    attempt?: number;
    absentKey?: string;
    completeSteps?: true | number;
    /** A hash field of the run that must exist (else `conflict`). */
    present?: string;
    /** Entering `running`: refused (`over-budget`) when the run's own budget or its tenant's
     * cap is spent (usage-scripts.ts BUDGET_AT_START). */
    budget?: true;
  };
  /** On a transition to `paused`: what paused the run (stored on the transition and event). */
  by?: PauseSource;
  /** The run's tenant and pool when the caller holds its record already (both are fixed at
   * creation and never rewritten): the script's keys are declared rather than named by the
   * script from the hash. */
  owner?: RunOwner;
  now?: Date;
}

export type RunOwner = Pick<RunResource, 'tenant' | 'pool'>;

/** A cap found spent when a run was to start. */
export interface BudgetAtStart {
  scope: 'run' | 'tenant';
  spentUsd: number;
  maxUsd: number;
  /** The tenant cap's UTC day or month; '' for the run's own budget. */
  period: string;
}

export type TransitionResult =
  | {
      status: 'ok';
      from: RunState;
      to: RunState;
      eventId: string;
      /** Entering `running` only: the run as the transition left it (same script, atomic). */
      run?: RunResource;
    }
  /** No such run. */
  | { status: 'missing' }
  /** The current state is not in `from`. */
  | { status: 'conflict'; state: RunState }
  /** The lifecycle does not allow current -> to. */
  | { status: 'illegal'; state: RunState }
  /** Entering `running` would exceed the tenant's cap; `waitingReason` was recorded. */
  | { status: 'blocked'; state: RunState; reason: string }
  /** `guard.budget`: the run's (`scope` run) or its tenant's cap is spent; nothing changed.
   * `period`: the tenant cap's UTC day or month ('' for the run's own budget). */
  | { status: 'over-budget'; state: RunState; budget: BudgetAtStart }
  /** `guard.completeSteps`: the history has `count` steps, the highest `lastStep`: a hole. */
  | { status: 'incomplete'; state: RunState; count: number; lastStep: number };

/** Thrown by helpers when a transition the caller requires did not happen. */
export class TransitionError extends Error {
  constructor(
    readonly runId: string,
    readonly result: Exclude<TransitionResult, { status: 'ok' }>,
    readonly to: RunState,
  ) {
    super(
      result.status === 'missing'
        ? `run ${runId} does not exist`
        : `run ${runId}: cannot go ${result.state} -> ${to} (${result.status})`,
    );
    this.name = 'TransitionError';
  }
}

/** A transition re-sent after a reconnect finds the run where the first one left it. */
function mergeReplies(to: RunState) {
  return (first: string[], again: string[]): string[] =>
    first[0] === 'ok' && (again[0] === 'conflict' || again[0] === 'illegal') && again[1] === to
      ? first
      : again;
}

export async function transitionRun(
  ctx: StoreContext,
  runId: string,
  request: TransitionRequest,
): Promise<TransitionResult> {
  const k = keys(ctx.prefix);
  const owner = request.owner;
  // Without the owner the script names the tenant and pool keys itself (no lookup round trip);
  // the run key stands in for them so that every declared key stays in the run's slot.
  const ownerKeys = owner
    ? [k.tenantRunning(owner.tenant), k.tenantLimits(owner.tenant), k.poolWaiting(owner.pool)]
    : [k.run(runId), k.run(runId), k.run(runId)];
  const now = request.now ?? new Date();
  const guard = request.guard;
  const write = (redis: Redis) =>
    runScript(
      redis,
      'annealTransition',
      [
        k.run(runId),
        k.transitions(runId),
        k.events(runId),
        ...ownerKeys,
        k.runCounts(),
        k.transitionLog(),
      ],
      [
        request.to,
        (request.from ?? []).join(','),
        request.reason,
        request.workerId ?? '',
        now.toISOString(),
        now.getTime(),
        runId,
        EVENTS_MAX_LEN,
        guard === undefined
          ? ''
          : JSON.stringify({
              ...(guard.attempt !== undefined && { attempt: String(guard.attempt) }),
              ...(guard.absentKey !== undefined && { absentKey: guard.absentKey }),
              ...(guard.present !== undefined && { present: guard.present }),
              ...(guard.budget && { runUsage: k.runUsage(runId) }),
              ...(guard.completeSteps !== undefined && { stepIndex: k.stepIndex(runId) }),
              ...(typeof guard.completeSteps === 'number' && { steps: guard.completeSteps }),
            }),
        owner ? '' : ctx.prefix,
        request.by ?? '',
        ...Object.entries(request.fields ?? {}).flat(),
      ],
    );
  const reply = await acknowledged(
    ctx,
    `run ${runId} -> ${request.to}`,
    write,
    mergeReplies(request.to),
  );
  const [status, state, extra] = reply as [string, RunState, string];
  switch (status) {
    case 'ok': {
      const run = reply.length > 3 ? runFromHash(hashFromFlat(reply, 3)) : null;
      return { status: 'ok', from: state, to: request.to, eventId: extra, ...(run && { run }) };
    }
    case 'blocked':
      return { status: 'blocked', state, reason: extra };
    case 'incomplete':
      return { status, state, count: Number(extra), lastStep: Number(reply[3]) };
    case 'over-budget':
      return {
        status,
        state,
        budget: {
          scope: extra === 'run' ? 'run' : 'tenant',
          spentUsd: Number(reply[3]),
          maxUsd: Number(reply[4]),
          period: reply[5] ?? '',
        },
      };
    case 'conflict':
    case 'illegal':
      return { status, state };
    default:
      return { status: 'missing' };
  }
}

/** `field, value, …` from `from` on (an HGETALL spliced into a script's reply) as a record. */
function hashFromFlat(flat: readonly string[], from: number): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = from; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
  return hash;
}

export type StartResult =
  /** `run`: the record as the start left it (state, attempt, workerId, spec, checkpoint…). */
  | { status: 'started'; attempt: number; run: RunResource }
  | { status: 'blocked'; reason: string }
  /** Its own budget or its tenant's cap is spent: not started (the caller pauses it). */
  | { status: 'over-budget'; budget: BudgetAtStart }
  /** The run is cancelled/finished (or already running elsewhere): drop the job. */
  | { status: 'not-startable'; state: RunState | null };

/**
 * Worker side, when BullMQ hands it the run's job: queued|retrying -> running, honouring the
 * tenant's concurrency cap. A run still marked `running` is taken over: BullMQ only re-delivers
 * a job whose lock expired, so its previous holder is lost; the run goes running -> retrying
 * (reason names the lost worker) -> running, and the caller resumes from the checkpoint.
 * A run whose own budget or tenant cap is spent does not start (`over-budget`), decided in the
 * start's own atomic script (docs/usage.md "Budgets").
 */
export async function startRun(
  ctx: StoreContext,
  runId: string,
  workerId: string,
  now?: Date,
): Promise<StartResult> {
  const start = () =>
    transitionRun(ctx, runId, {
      to: 'running',
      from: ['queued', 'retrying'],
      reason: `started on worker ${workerId}`,
      workerId,
      guard: { budget: true },
      ...(now && { now }),
    });
  let result = await start();
  if (result.status === 'conflict' && result.state === 'running') {
    const previous = await ctx.redis.hget(keys(ctx.prefix).run(runId), 'workerId');
    await releaseRun(ctx, runId, `worker ${previous ?? 'unknown'} lost (job lock expired)`);
    result = await start();
  }
  if (result.status === 'ok') {
    if (!result.run) throw new Error(`run ${runId}: the start script replied without the record`);
    return { status: 'started', attempt: result.run.attempt, run: result.run };
  }
  if (result.status === 'blocked') return { status: 'blocked', reason: result.reason };
  if (result.status === 'over-budget') return { status: 'over-budget', budget: result.budget };
  return { status: 'not-startable', state: result.status === 'missing' ? null : result.state };
}

/** Worker side: running -> succeeded | failed | cancelled. */
export async function finishRun(
  ctx: StoreContext,
  runId: string,
  outcome: { state: 'succeeded' | 'failed' | 'cancelled'; reason: string; error?: string },
  workerId?: string,
  owner?: RunOwner,
): Promise<TransitionResult> {
  return transitionRun(ctx, runId, {
    to: outcome.state,
    from: ['running'],
    reason: outcome.reason,
    ...(workerId && { workerId }),
    ...(owner && { owner }),
    ...(outcome.error !== undefined && { fields: { error: outcome.error } }),
  });
}

/** running -> retrying: the worker was lost or released the run; it resumes from its checkpoint. */
export async function releaseRun(
  ctx: StoreContext,
  runId: string,
  reason: string,
  workerId?: string,
  owner?: RunOwner,
): Promise<TransitionResult> {
  return transitionRun(ctx, runId, {
    to: 'retrying',
    from: ['running'],
    reason,
    ...(workerId && { workerId }),
    ...(owner && { owner }),
  });
}

/** Flags the run for cancel (workers also check it at step boundaries). `asked`: their text and,
 * where known, who asked; the `cancelled` transition records both (reason, Transition.principal)
 * whichever process makes it, and whether the worker heard the message or read the flag. */
export async function markCancelRequested(
  ctx: StoreContext,
  runId: string,
  asked?: { principal?: string; reason: string },
): Promise<boolean> {
  const key = keys(ctx.prefix).run(runId);
  return acknowledged(ctx, `cancel of run ${runId}`, async (redis) => {
    if (!(await redis.exists(key))) return false;
    await redis.hset(key, {
      cancelRequested: '1',
      ...(asked && { cancelReason: asked.reason }),
      ...(asked?.principal !== undefined && { cancelPrincipal: asked.principal }),
    });
    return true;
  });
}

export async function isCancelRequested(ctx: StoreContext, runId: string): Promise<boolean> {
  return (await ctx.redis.hget(keys(ctx.prefix).run(runId), 'cancelRequested')) === '1';
}
