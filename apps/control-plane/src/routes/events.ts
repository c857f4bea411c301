// GET /v1/runs/{id}/events: Server-Sent Events from the run's Redis stream. Replays after
// Last-Event-ID, then follows live through the control plane's one shared subscription
// (infra/event-hub.ts); ends after the terminal run:state event, or when the control plane
// shuts down (the client resumes elsewhere with Last-Event-ID). Open streams are capped per
// token and per control plane (429 beyond).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { RunStateEvent, type StoredRunEvent, isTerminal, parseStored } from '@anneal/protocol';
import {
  type StoredEventJson,
  compareEventIds,
  getRun,
  isEventId,
  lastEventId,
} from '@anneal/store';
import type { AppContext } from '../context.ts';
import { AnnealError, runNotFound } from '../errors.ts';
import { principalOf } from '../plugins/auth.ts';
import { readConfirmedEvents } from '../services/runs/confirmed-events.ts';
import { StreamLimitError } from '../infra/event-hub.ts';
import { RunIdParams, problemResponses } from './schemas.ts';

const EventsQuery = Type.Object(
  { lastEventId: Type.Optional(Type.String({ description: 'Same as the Last-Event-ID header.' })) },
  { additionalProperties: false },
);

/** Events per XRANGE while replaying a stream. */
const REPLAY_PAGE = 1000;

function frame(stored: StoredRunEvent): string {
  return `id: ${stored.id}\nevent: ${stored.event.type}\ndata: ${JSON.stringify(stored.event)}\n\n`;
}

/** A replayed event, sent as stored (JSON text has no raw newline, so it is one data line). */
function storedFrame(stored: StoredEventJson): string {
  return `id: ${stored.id}\nevent: ${stored.type}\ndata: ${stored.json}\n\n`;
}

function endsRun(stored: StoredRunEvent): boolean {
  return stored.event.type === 'run:state' && isTerminal(stored.event.to);
}

function storedEndsRun(stored: StoredEventJson): boolean {
  return (
    stored.type === 'run:state' &&
    isTerminal(parseStored(RunStateEvent, stored.json, `event ${stored.id}`).to)
  );
}

export const eventRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/v1/runs/:id/events',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'Run events as Server-Sent Events (resumable with Last-Event-ID)',
        produces: ['text/event-stream'],
        params: RunIdParams,
        headers: Type.Object({
          'last-event-id': Type.Optional(
            Type.String({
              description:
                'Resume after this event id (the `id:` of the last event received); replays what was missed.',
            }),
          ),
        }),
        querystring: EventsQuery,
        response: { 200: Type.String({ description: 'text/event-stream' }), ...problemResponses },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { tenant } = principal;
      const runId = request.params.id;
      const header = request.headers['last-event-id'];
      const after = (typeof header === 'string' ? header : request.query.lastEventId) ?? '0';
      if (!isEventId(after)) {
        throw new AnnealError(
          'ANNEAL_ERR_VALIDATION',
          `Last-Event-ID '${after}' is not an event id`,
          [{ path: '/headers/last-event-id', message: 'expected an id like 1714070000000-0' }],
        );
      }
      if (!(await getRun(ctx.store, runId, { tenant }))) throw runNotFound(runId);
      // An id past the newest event can only come from another run or a forged header: the
      // stream would wait for ids that never come and miss the terminal event (clients would
      // reconnect forever), so it is refused.
      const newest = after === '0' ? undefined : await lastEventId(ctx.store, runId);
      if (after !== '0' && (newest === undefined || compareEventIds(after, newest) > 0)) {
        throw new AnnealError(
          'ANNEAL_ERR_VALIDATION',
          `Last-Event-ID '${after}' is after the run's newest event (${newest ?? 'none'})`,
          [{ path: '/headers/last-event-id', message: 'expected an id this stream has sent' }],
        );
      }

      let release: () => void;
      try {
        release = ctx.events.reserve(principal.tokenHash);
      } catch (error) {
        if (error instanceof StreamLimitError) {
          throw new AnnealError('ANNEAL_ERR_RATE_LIMITED', error.message);
        }
        throw error;
      }

      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      raw.write('retry: 2000\n\n');

      let done = false;
      let unsubscribe = () => {};
      let keepAlive: NodeJS.Timeout | undefined;
      let finished!: () => void;
      const over = new Promise<void>((resolve) => (finished = resolve));
      const finish = () => {
        if (done) return;
        done = true;
        clearInterval(keepAlive);
        unsubscribe();
        release();
        if (!raw.writableEnded) raw.end();
        finished();
      };
      request.raw.on('close', finish);

      // Backpressure. Replay writes a frame and, when the socket's buffer is over its
      // high-water mark, waits for it to drain before the next (and before reading the next page
      // from Redis); a client that drains nothing for sseStallMs is dropped. Live events are
      // pushed by the shared subscription: a stream whose unsent bytes pass sseMaxBufferedBytes is
      // dropped. A dropped client resumes with Last-Event-ID. So a stream holds at most about
      // sseMaxBufferedBytes (plus one frame), and a token sseMaxStreamsPerToken times that.
      const drop = (why: string) => {
        if (done) return;
        request.log.info({ runId, buffered: raw.writableLength }, `event stream dropped: ${why}`);
        raw.destroy();
        finish();
      };
      const drained = () =>
        new Promise<void>((resolve) => {
          const stall = setTimeout(() => {
            cleanup();
            drop(`nothing read for ${ctx.settings.sseStallMs} ms`);
            resolve();
          }, ctx.settings.sseStallMs);
          const cleanup = () => {
            clearTimeout(stall);
            raw.off('drain', onDrain);
            request.raw.off('close', onDrain);
          };
          const onDrain = () => {
            cleanup();
            resolve();
          };
          raw.once('drain', onDrain);
          request.raw.once('close', onDrain);
        });
      /** Writes `events` in order, waiting on backpressure; true once the run has ended. */
      const replay = async (events: readonly StoredEventJson[]): Promise<boolean> => {
        for (const stored of events) {
          if (done) return false;
          const flowing = raw.write(storedFrame(stored));
          if (storedEndsRun(stored)) return true;
          if (!flowing) await drained();
        }
        return false;
      };
      const sendLive = (events: readonly StoredRunEvent[]): boolean => {
        for (const stored of events) {
          raw.write(frame(stored));
          if (endsRun(stored)) return true;
        }
        if (raw.writableLength > ctx.settings.sseMaxBufferedBytes) {
          drop(`over ${ctx.settings.sseMaxBufferedBytes} unsent bytes`);
        }
        return false;
      };

      let cursor = after;
      try {
        // Replay what is stored, then follow through the control plane's shared subscription. A
        // page shorter than REPLAY_PAGE was the end of the stream when read: what comes after it
        // arrives through the subscription (it reads from `cursor`), so no empty read is needed.
        for (;;) {
          const batch = await readConfirmedEvents(ctx, runId, cursor, REPLAY_PAGE);
          cursor = batch.at(-1)?.id ?? cursor;
          if (await replay(batch)) return finish();
          if (done) return;
          if (batch.length < REPLAY_PAGE) break;
        }
        const run = await getRun(ctx.store, runId);
        if (!run || isTerminal(run.state)) {
          // Terminal and nothing after `cursor`: the client already has everything.
          await replay(await readConfirmedEvents(ctx, runId, cursor));
          return finish();
        }
        if (done) return;
        keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), ctx.settings.sseKeepAliveMs);
        unsubscribe = ctx.events.subscribe({
          runId,
          cursor,
          deliver: (events) => {
            if (!done && sendLive(events)) finish();
          },
          close: finish,
        });
        await over;
      } catch (error) {
        if (!done) request.log.warn({ err: error, runId }, 'event stream failed');
        finish();
      }
    },
  );
};
