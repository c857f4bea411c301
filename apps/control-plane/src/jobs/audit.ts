// After a Redis failover, runs whose data the promoted replica lacked (store/audit.ts): checked
// at start-up, after every reconnect of the request connection (a failover looks like one),
// and every `lostDataAuditMs`. A run without its BullMQ job is queued again (a running one is
// released first); a run whose step history cannot be completed any more (steps missing below
// its checkpoint: resuming would skip them) fails. Each says why on its event stream
// (`run:notice` redis_data_lost). A run whose lost steps its resume re-runs is left to the
// worker, which notices the gap itself (apps/worker runtime/run-context.ts).
import type { Redis } from 'ioredis';
import {
  type LostData,
  appendRunNotice,
  enqueueRun,
  findLostData,
  getRun,
  transitionRun,
} from '@anneal/store';
import type { AppContext } from '../context.ts';

export const DATA_LOST_NOTICE = 'redis_data_lost';

export interface LostDataAudit {
  /** One audit now; resolves with what it found (and repaired or failed). */
  run(): Promise<LostData[]>;
  start(): void;
  close(): Promise<void>;
}

export interface AuditLog {
  warn(details: object, message: string): void;
}

const steps = (missing: readonly number[]) =>
  `step(s) ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ', …' : ''}`;

type AuditContext = Pick<AppContext, 'store' | 'queues' | 'operator'>;

async function repair(ctx: AuditContext, found: LostData, log: AuditLog): Promise<void> {
  const { runId } = found;
  const notice = (message: string) =>
    appendRunNotice(ctx.store, runId, { code: DATA_LOST_NOTICE, message });
  if (found.kind === 'steps') {
    const first = found.missing[0]!;
    if (found.checkpointStep === null || found.checkpointStep < first) {
      log.warn({ runId, missing: found.missing }, 'run lost steps; its resume runs them again');
      return;
    }
    const message =
      `Redis lost ${steps(found.missing)} of this run, acknowledged before (a failover), and ` +
      `its checkpoint (step ${found.checkpointStep}) is past them: its history cannot be completed`;
    const result = await transitionRun(ctx.store, runId, {
      to: 'failed',
      from: [found.state as 'running' | 'queued' | 'retrying'],
      reason: message,
      fields: { error: message },
    });
    if (result.status === 'ok') {
      await notice(message);
      log.warn({ runId, missing: found.missing }, 'run failed: Redis lost steps it cannot redo');
    }
    return;
  }
  const run = await getRun(ctx.store, runId);
  if (!run || run.state !== found.state) return; // it moved on meanwhile
  const queue = ctx.queues.get(run.pool);
  if (found.jobState === 'completed' || found.jobState === 'failed') await queue.remove(runId);
  if (run.state === 'running') {
    const released = await transitionRun(ctx.store, runId, {
      to: 'retrying',
      from: ['running'],
      reason: 'Redis lost its job in a failover; queued again',
      guard: { attempt: run.attempt },
      owner: run,
    });
    if (released.status !== 'ok') return;
  }
  await enqueueRun(queue, run);
  await notice(
    `Redis lost this run's job (${found.jobState}) in a failover while the run was ` +
      `${found.state}; it was queued again and resumes from its checkpoint`,
  );
  log.warn({ runId, state: found.state, job: found.jobState }, 'run had no job: queued again');
}

export function createLostDataAudit(
  ctx: AuditContext,
  redis: Redis,
  log: AuditLog,
  /** `minAgeMs`: runs changed more recently are not checked for a missing job (store audit). */
  options: { everyMs: number; afterReconnectMs?: number; minAgeMs?: number },
): LostDataAudit {
  let timer: NodeJS.Timeout | undefined;
  let soon: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let connectedOnce = redis.status === 'ready';
  const run = async () => {
    const found = await findLostData(ctx.store, {
      tenants: Object.keys(ctx.operator.tenants),
      pools: Object.keys(ctx.operator.pools),
      queueOf: (pool) => ctx.queues.get(pool),
      ...(options.minAgeMs !== undefined && { minAgeMs: options.minAgeMs }),
    });
    for (const item of found) {
      await repair(ctx, item, log).catch((error: unknown) =>
        log.warn({ runId: item.runId, err: String(error) }, 'lost-data repair failed'),
      );
    }
    return found;
  };
  const background = () => {
    running = running
      .then(run)
      .catch((error: unknown) => log.warn({ err: String(error) }, 'lost-data audit failed'));
  };
  /** Shortly, not at once: at start-up readiness must not wait on Redis, and after a
   * reconnect the other connections (workers') need a moment to find the new primary too. */
  const later = () => {
    clearTimeout(soon);
    soon = setTimeout(background, options.afterReconnectMs ?? 2000);
    soon.unref();
  };
  const onReady = () => {
    if (connectedOnce) later();
    connectedOnce = true;
  };
  return {
    run,
    start() {
      if (timer) return;
      redis.on('ready', onReady);
      later();
      timer = setInterval(background, options.everyMs);
      timer.unref();
    },
    async close() {
      redis.off('ready', onReady);
      clearInterval(timer);
      clearTimeout(soon);
      timer = undefined;
      await running;
    },
  };
}
