// Run notices (`run:notice` events): appended to the run's event stream, so `anneal watch` and
// SSE clients see them next to state changes and steps. Only for a run that exists: a notice
// never creates a run's keys.
import type { RunNoticeEvent } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { EVENTS_MAX_LEN } from './scripts.ts';

const NOTICE_CODE = /^[a-z][a-z0-9_]*$/;

/** Appends a notice to `runId`'s event stream; returns its stream id (null: no such run). */
export async function appendRunNotice(
  ctx: StoreContext,
  runId: string,
  notice: { code: string; message: string },
  now: Date = new Date(),
): Promise<string | null> {
  if (!NOTICE_CODE.test(notice.code)) {
    throw new RangeError(`appendRunNotice: code '${notice.code}' must match ${NOTICE_CODE}`);
  }
  const k = keys(ctx.prefix);
  if ((await ctx.redis.exists(k.run(runId))) === 0) return null;
  const event: RunNoticeEvent = {
    type: 'run:notice',
    runId,
    code: notice.code,
    message: notice.message,
    at: now.toISOString(),
  };
  return ctx.redis.xadd(
    k.events(runId),
    'MAXLEN',
    '~',
    EVENTS_MAX_LEN,
    '*',
    'event',
    JSON.stringify(event),
  );
}
