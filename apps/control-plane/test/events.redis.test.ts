// SSE over real HTTP: live events, reconnect with Last-Event-ID, end after the terminal state.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendRunNotice } from '@anneal/store';
import { TOKENS, type TestPlane, auth, eventually, submit, testPlane } from './helpers.ts';
import { readSse } from './sse.ts';
import { TestWorker } from './test-worker.ts';

let plane: TestPlane;
let worker: TestWorker;
let base: string;

beforeEach(async () => {
  plane = await testPlane();
  worker = await new TestWorker({ prefix: plane.prefix, holdAtStep: 3 }).start();
  base = await plane.app.listen({ host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await worker.close();
  await plane.cleanup();
});

describe('GET /v1/runs/{id}/events', () => {
  it('replays after Last-Event-ID on reconnect without losing or repeating events', async () => {
    const id = (await submit(plane.app, 'kind: sft\nsteps: 5')).json().id;
    const url = `${base}/v1/runs/${id}/events`;
    const first = await readSse(url, auth(TOKENS.acmeViewer), (events) =>
      events.some((e) => e.event === 'step:committed' && e.data.step === 2),
    );
    expect(first.status).toBe(200);
    expect(first.ended).toBe(false);
    expect(first.events[0]?.data).toMatchObject({ type: 'run:state', from: null, to: 'queued' });

    await eventually(() => worker.isHeld(id));
    worker.release(id);
    await eventually(
      async () =>
        (
          await plane.app.inject({
            method: 'GET',
            url: `/v1/runs/${id}`,
            headers: auth(TOKENS.acmeViewer),
          })
        ).json().state === 'succeeded',
    );

    const lastSeen = first.events.at(-1)?.id ?? '';
    const resumed = await readSse(url, { ...auth(TOKENS.acmeViewer), 'last-event-id': lastSeen });
    expect(resumed.ended).toBe(true);
    const full = await readSse(url, auth(TOKENS.acmeViewer));
    expect(full.ended).toBe(true);
    expect([...first.events, ...resumed.events].map((e) => e.id)).toEqual(
      full.events.map((e) => e.id),
    );
    expect(
      resumed.events.filter((e) => e.event === 'step:committed').map((e) => e.data.step),
    ).toEqual([3, 4, 5]);
    expect(resumed.events.at(-1)?.data).toMatchObject({ type: 'run:state', to: 'succeeded' });

    const viaQuery = await readSse(
      `${url}?lastEventId=${resumed.events.at(-2)?.id}`,
      auth(TOKENS.acmeViewer),
    );
    expect(viaQuery.events.map((e) => e.id)).toEqual([resumed.events.at(-1)?.id]);
  });

  it('replays a backlog longer than one XRANGE page in order, each event once', async () => {
    const id = (await submit(plane.app, 'kind: sft\nsteps: 5')).json().id;
    const notices = 2500; // two full pages of 1000 and a short one
    await Promise.all(
      Array.from({ length: notices }, (_, i) =>
        appendRunNotice(plane.store, id, { code: 'backlog', message: String(i) }),
      ),
    );
    const read = await readSse(`${base}/v1/runs/${id}/events`, auth(TOKENS.acmeViewer), (events) =>
      events.some((e) => e.data.type === 'run:notice' && e.data.message === String(notices - 1)),
    );
    expect(read.status).toBe(200);
    const ids = read.events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const backlog = read.events.filter((e) => e.data.type === 'run:notice');
    expect(backlog.map((e) => e.data.message)).toEqual(
      Array.from({ length: notices }, (_, i) => String(i)),
    );
  });

  it('rejects bad ids and other tenants', async () => {
    const id = (await submit(plane.app, 'kind: sft\nsteps: 1')).json().id;
    const bad = await fetch(`${base}/v1/runs/${id}/events`, {
      headers: { ...auth(TOKENS.acmeViewer), 'last-event-id': 'xyz' },
    });
    expect(bad.status).toBe(400);
    const problem = (await bad.json()) as { errors: Array<{ path: string }> };
    expect(problem.errors[0]?.path).toBe('/headers/last-event-id');
    // Past the newest event, or beyond a stream id's 64 bits: refused, not an empty stream
    // that a client would reconnect to forever.
    for (const lastEventId of ['99999999999999-0', '18446744073709551616-0']) {
      const ahead = await fetch(`${base}/v1/runs/${id}/events`, {
        headers: { ...auth(TOKENS.acmeViewer), 'last-event-id': lastEventId },
      });
      expect(ahead.status, lastEventId).toBe(400);
      expect(ahead.headers.get('content-type')).toMatch(/problem\+json/);
    }
    const other = await fetch(`${base}/v1/runs/${id}/events`, {
      headers: auth(TOKENS.betaSubmitter),
    });
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toMatch(/problem\+json/);
  });
});
