// GET /v1/runs/{id}/events: Server-Sent Events from the run's Redis stream. Replays after
// Last-Event-ID, then follows live with XREAD BLOCK on a connection of its own; ends after the
// terminal run:state event.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Redis } from 'ioredis';
import { type StoredRunEvent, isTerminal } from '@anneal/protocol';
import {
  compareEventIds,
  getRun,
  isEventId,
  lastEventId,
  readEvents,
  waitForEvents,
} from '@anneal/store';
import type { AppContext } from '../context.ts';
import { AnnealError, runNotFound } from '../errors.ts';
import { principalOf } from '../plugins/auth.ts';
import { RunIdParams, problemResponses } from './schemas.ts';

const EventsQuery = Type.Object(
  { lastEventId: Type.Optional(Type.String({ description: 'Same as the Last-Event-ID header.' })) },
  { additionalProperties: false },
);

function frame(stored: StoredRunEvent): string {
  return `id: ${stored.id}\nevent: ${stored.event.type}\ndata: ${JSON.stringify(stored.event)}\n\n`;
}

function endsRun(stored: StoredRunEvent): boolean {
  return stored.event.type === 'run:state' && isTerminal(stored.event.to);
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
      const { tenant } = principalOf(request);
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

      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      raw.write('retry: 2000\n\n');

      let closed = false;
      let blocking: Redis | null = null;
      request.raw.on('close', () => {
        closed = true;
        blocking?.disconnect();
      });

      const send = (events: StoredRunEvent[]): boolean => {
        for (const stored of events) {
          raw.write(frame(stored));
          if (endsRun(stored)) return true;
        }
        return false;
      };

      let cursor = after;
      try {
        // Replay what is stored, then follow.
        for (;;) {
          const batch = await readEvents(ctx.store, runId, cursor);
          if (batch.length === 0) break;
          cursor = batch.at(-1)?.id ?? cursor;
          if (send(batch)) return void raw.end();
        }
        const run = await getRun(ctx.store, runId);
        if (!run || isTerminal(run.state)) {
          // Terminal and nothing after `cursor`: the client already has everything.
          const late = await readEvents(ctx.store, runId, cursor);
          send(late);
          return void raw.end();
        }
        blocking = ctx.createBlockingClient();
        while (!closed) {
          const events = await waitForEvents(
            blocking,
            ctx.store.prefix,
            runId,
            cursor,
            ctx.settings.sseKeepAliveMs,
          );
          if (events.length === 0) {
            raw.write(': keep-alive\n\n');
            continue;
          }
          cursor = events.at(-1)?.id ?? cursor;
          if (send(events)) break;
        }
      } catch (error) {
        if (!closed) request.log.warn({ err: error, runId }, 'event stream failed');
      } finally {
        blocking?.disconnect();
        if (!raw.writableEnded) raw.end();
      }
    },
  );
};
