// Follows the store's transition log (every run state change, whichever process made it: this
// control plane on submit/cancel, workers on start/finish/release) through a Redis consumer
// group, so each change is counted by exactly one control-plane replica, and reports it as
// `run:transitioned` (anneal_runs_transitions_total, anneal_queue_wait_duration_seconds).
// Entries a crashed replica read but never acknowledged are claimed after a minute.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  type LoggedTransition,
  ackTransitions,
  claimStaleTransitions,
  ensureTransitionGroup,
  readTransitions,
} from '@anneal/store';
import type { AppContext } from '../context.ts';

export const TRANSITION_GROUP = 'control-plane';
const BLOCK_MS = 5000;
const CLAIM_EVERY_MS = 30_000;
const CLAIM_MIN_IDLE_MS = 60_000;

export interface TransitionFollower {
  stop(): Promise<void>;
}

export interface FollowerLog {
  warn(details: object, message: string): void;
}

function report(ctx: AppContext, entries: readonly LoggedTransition[]): void {
  for (const e of entries) {
    ctx.metrics.emit('run:transitioned', {
      runId: e.runId,
      kind: e.kind,
      pool: e.pool,
      state: e.to,
      ...(e.waitedSeconds !== undefined && { queuedSeconds: e.waitedSeconds }),
    });
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function followTransitions(ctx: AppContext, log: FollowerLog): TransitionFollower {
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  let stopped = false;
  let blocking: Redis | null = null;

  const loop = async () => {
    let nextClaim = Date.now() + CLAIM_EVERY_MS;
    let grouped = false;
    while (!stopped) {
      try {
        blocking ??= ctx.createBlockingClient();
        if (!grouped) await ensureTransitionGroup(ctx.store, TRANSITION_GROUP);
        grouped = true;
        const batch = await readTransitions(
          blocking,
          ctx.store.prefix,
          TRANSITION_GROUP,
          consumer,
          BLOCK_MS,
        );
        report(ctx, batch.entries);
        await ackTransitions(ctx.store, TRANSITION_GROUP, batch.ids);
        if (Date.now() >= nextClaim) {
          nextClaim = Date.now() + CLAIM_EVERY_MS;
          const stale = await claimStaleTransitions(
            ctx.store,
            TRANSITION_GROUP,
            consumer,
            CLAIM_MIN_IDLE_MS,
          );
          report(ctx, stale.entries);
          await ackTransitions(ctx.store, TRANSITION_GROUP, stale.ids);
        }
      } catch (error) {
        if (stopped) break;
        grouped = false; // e.g. NOGROUP after the stream was deleted
        log.warn({ err: String(error) }, 'transition log read failed; retrying');
        blocking?.disconnect();
        blocking = null;
        await sleep(1000);
      }
    }
  };
  const running = loop();
  return {
    async stop() {
      stopped = true;
      blocking?.disconnect();
      // Commands on the shared client wait while Redis is down: do not hold shutdown for them
      // (the loop exits on its own once they settle, since `stopped` is set).
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, 1000)));
      await Promise.race([running, grace]);
      clearTimeout(timer);
    },
  };
}
