// Cancel / drain messages on Redis pub/sub (channel `<prefix>:control`).
import type { Redis } from 'ioredis';
import { ControlMessage } from '@anneal/protocol';
import { Value } from '@sinclair/typebox/value';
import { type StoreContext, keys } from './context.ts';
import { markCancelRequested } from './transitions.ts';

/** Publishes a message; returns the number of subscribers that received it. */
export async function publishControl(ctx: StoreContext, message: ControlMessage): Promise<number> {
  return ctx.redis.publish(keys(ctx.prefix).controlChannel(), JSON.stringify(message));
}

/** Sets the run's cancelRequested flag and tells the owning worker. False if no such run. */
export async function requestCancel(
  ctx: StoreContext,
  runId: string,
  reason: string,
  principal?: string,
): Promise<boolean> {
  const asked = principal === undefined ? { reason } : { principal, reason };
  if (!(await markCancelRequested(ctx, runId, asked))) return false;
  await publishControl(ctx, { type: 'cancel', runId, reason });
  return true;
}

/**
 * Subscribes `subscriber` (a connection dedicated to pub/sub) to control messages.
 * Malformed messages go to `onInvalid`. Returns a function that unsubscribes.
 */
export async function subscribeControl(
  subscriber: Redis,
  prefix: string,
  onMessage: (message: ControlMessage) => void,
  onInvalid: (raw: string) => void = () => {},
): Promise<() => Promise<void>> {
  const channel = keys(prefix).controlChannel();
  const listener = (from: string, raw: string) => {
    if (from !== channel) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      onInvalid(raw);
      return;
    }
    if (Value.Check(ControlMessage, parsed)) onMessage(parsed);
    else onInvalid(raw);
  };
  subscriber.on('message', listener);
  await subscriber.subscribe(channel);
  return async () => {
    subscriber.off('message', listener);
    await subscriber.unsubscribe(channel);
  };
}
