// SSE at scale: every stream of a control plane shares one Redis subscription (opening streams
// opens no Redis connections), streams are capped per token (429 beyond), every stream still
// gets every event, and a shutdown ends open streams at once instead of waiting for clients.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOKENS, type TestPlane, auth, eventually, submit, testPlane } from './helpers.ts';
import { TestWorker } from './test-worker.ts';

let plane: TestPlane;
let worker: TestWorker;
let base: string;

beforeEach(async () => {
  plane = await testPlane({ settings: { sseMaxStreamsPerToken: 6 } });
  worker = await new TestWorker({ prefix: plane.prefix, holdAtStep: 2 }).start();
  base = await plane.app.listen({ host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await worker.close();
  await plane.cleanup();
});

/** This plane's Redis connections (by their name): other tests share the server. */
const redisClients = async () =>
  ((await plane.redis.client('LIST')) as string)
    .trim()
    .split('\n')
    .filter((line) => line.includes(` name=${plane.connectionName} `)).length;

async function open(url: string, token: string) {
  const controller = new AbortController();
  const res = await fetch(url, { headers: auth(token), signal: controller.signal });
  const text = async () => {
    const body = await res.text(); // until the server ends the stream
    return body;
  };
  return { res, text, abort: () => controller.abort() };
}

describe('SSE streams through the shared event hub', () => {
  it('open no Redis connection per stream, are capped per token, and all get every event', async () => {
    const id = (await submit(plane.app, 'kind: sft\nsteps: 3')).json().id;
    await eventually(() => worker.isHeld(id));
    const url = `${base}/v1/runs/${id}/events`;
    const before = await redisClients();
    expect(before).toBeGreaterThan(0); // the plane's own connections are seen
    const streams = [];
    for (let i = 0; i < 6; i++) streams.push(await open(url, TOKENS.acmeViewer));
    expect(streams.map((s) => s.res.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await redisClients()).toBeLessThanOrEqual(before);

    const refused = await fetch(url, { headers: auth(TOKENS.acmeViewer) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/problem\+json/);
    expect(await refused.json()).toMatchObject({ code: 'ANNEAL_ERR_RATE_LIMITED' });
    const otherToken = await open(url, TOKENS.acmeSubmitter);
    expect(otherToken.res.status).toBe(200);

    worker.release(id);
    const bodies = await Promise.all([...streams, otherToken].map((s) => s.text()));
    for (const body of bodies) {
      const steps = [...body.matchAll(/"type":"step:committed","runId":"[^"]+","step":(\d+)/g)];
      expect(steps.map((m) => Number(m[1]))).toEqual([1, 2, 3]);
      expect(body).toMatch(/"to":"succeeded"/);
    }
    // Ended streams free their slots.
    const again = await open(url, TOKENS.acmeViewer);
    expect(again.res.status).toBe(200);
    await again.text();
  });

  it('ends open streams when the control plane closes, without waiting for the clients', async () => {
    const id = (await submit(plane.app, 'kind: sft\nsteps: 3')).json().id;
    await eventually(() => worker.isHeld(id));
    const streams = await Promise.all(
      [0, 1, 2].map(() => open(`${base}/v1/runs/${id}/events`, TOKENS.acmeViewer)),
    );
    const started = Date.now();
    await plane.app.close();
    const closeMs = Date.now() - started;
    const bodies = await Promise.all(streams.map((s) => s.text()));
    expect(bodies.every((b) => b.startsWith('retry: 2000'))).toBe(true);
    expect(closeMs).toBeLessThan(5_000); // bounded; clients kept their connections open
    plane.app = await plane.restart().catch(() => plane.app);
    worker.release(id);
  });
});
