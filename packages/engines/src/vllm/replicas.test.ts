// Replica routing over real loopback HTTP: failover, health checks, re-admission,
// least-in-flight balancing, the in-flight limit and per-request timeouts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeTimers, manualScheduler } from '../../test/fake-timers.ts';
import type { FakeTimers } from '../../test/fake-timers.ts';
import { EngineError } from '../http/errors.ts';
import type { SampleRequest } from '../types.ts';
import { VllmInferenceEngine } from './client.ts';
import type { VllmEndpointConfig } from './config.ts';
import type { VllmEvent } from './transport.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

interface Setup {
  fakes: FakeVllmServer[];
  engine: VllmInferenceEngine;
  events: VllmEvent[];
  time: FakeTimers;
}

async function setup(replicas: number, config: Partial<VllmEndpointConfig> = {}): Promise<Setup> {
  const fakes = await Promise.all(Array.from({ length: replicas }, () => FakeVllmServer.start()));
  const time = fakeTimers();
  const events: VllmEvent[] = [];
  const engine = new VllmInferenceEngine(
    {
      name: 'vllm-pool',
      replicas: fakes.map((f) => f.url),
      model: 'base-model',
      healthCheckIntervalMs: 0,
      retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 },
      ...config,
    },
    { timers: time.timers, onEvent: (e) => events.push(e) },
  );
  open.push(engine, ...fakes);
  return { fakes, engine, events, time };
}

const request: SampleRequest = {
  prompt: [5, 6],
  n: 2,
  maxTokens: 3,
  temperature: 1,
  topP: 1,
  seed: 1,
};
const completions = (fake: FakeVllmServer): number => fake.requestsTo('/v1/completions').length;

describe('vLLM replicas', () => {
  it('fails over from a stopped replica, drops it, and re-admits it when healthy', async () => {
    const { fakes, engine, events } = await setup(2);
    const [a, b] = fakes as [FakeVllmServer, FakeVllmServer];
    await a.stop();
    for (let i = 0; i < 3; i += 1) await expect(engine.sample(request)).resolves.toHaveLength(2);
    expect(completions(b)).toBe(3);
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([false, true]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'replica:down', replica: a.url }),
    );

    expect((await engine.checkHealth()).map((r) => r.healthy)).toEqual([false, true]); // still down
    await a.restart();
    expect((await engine.checkHealth()).map((r) => r.healthy)).toEqual([true, true]);
    expect(events).toContainEqual({ type: 'replica:up', endpoint: 'vllm-pool', replica: a.url });
    await engine.sample(request);
    await engine.sample(request);
    expect(completions(a)).toBe(1); // traffic flows to A again
  });

  it('drops a replica whose /health answers 503 and re-admits it on 200', async () => {
    const { fakes, engine } = await setup(2);
    const [a, b] = fakes as [FakeVllmServer, FakeVllmServer];
    a.healthStatus = 503;
    await engine.checkHealth();
    for (let i = 0; i < 4; i += 1) await engine.sample(request);
    expect([completions(a), completions(b)]).toEqual([0, 4]);
    a.healthStatus = 200;
    await engine.checkHealth();
    for (let i = 0; i < 4; i += 1) await engine.sample(request);
    expect([completions(a), completions(b)]).toEqual([2, 6]);
  });

  it('runs health checks on the scheduler interval and stops them on close', async () => {
    const fake = await FakeVllmServer.start();
    const scheduler = manualScheduler();
    const engine = new VllmInferenceEngine(
      { name: 'vllm-tick', replicas: [fake.url], model: 'base-model', healthCheckIntervalMs: 5000 },
      { scheduler, timers: fakeTimers().timers },
    );
    open.push(engine, fake);
    expect(scheduler.active).toBe(1);
    scheduler.tick();
    await vi.waitFor(() => expect(fake.requestsTo('/health')).toHaveLength(1));
    await engine.close();
    expect(scheduler.active).toBe(0);
  });

  it('sends to the replica with the fewest requests in flight', async () => {
    const { fakes, engine } = await setup(2);
    const [a, b] = fakes as [FakeVllmServer, FakeVllmServer];
    a.enqueue('/v1/completions', { kind: 'hang' });
    b.enqueue('/v1/completions', { kind: 'hang' });
    const held = new AbortController();
    const first = engine.sample(request, held.signal).catch((e: unknown) => e);
    await vi.waitFor(() => expect(a.hanging + b.hanging).toBe(1));
    const busy = a.hanging === 1 ? a : b;
    const idle = busy === a ? b : a;
    idle.script.clear(); // only the first request hangs
    for (let i = 0; i < 3; i += 1) await engine.sample(request);
    expect(completions(idle)).toBe(3);
    expect(completions(busy)).toBe(1);
    held.abort(new Error('test done'));
    expect(await first).toEqual(new Error('test done'));
  });

  it('keeps at most maxInFlight requests in flight and queues the rest', async () => {
    const { fakes, engine } = await setup(1, { maxInFlight: 2 });
    const [a] = fakes as [FakeVllmServer];
    a.enqueue('/v1/completions', { kind: 'hang' }, { kind: 'hang' });
    const held = new AbortController();
    const hung = [1, 2].map(() => engine.sample(request, held.signal).catch((e: unknown) => e));
    await vi.waitFor(() => expect(a.hanging).toBe(2));
    const third = engine.sample(request);
    expect(engine.stats()).toMatchObject({ inFlight: 2, queued: 1 });
    expect(completions(a)).toBe(2);
    held.abort(new Error('release'));
    await expect(third).resolves.toHaveLength(2);
    await Promise.all(hung);
    expect(engine.stats()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  // Intended change: a timeout on a replica whose /health passes is a slow
  // request, not a dead replica; it is dropped only when /health fails too.
  it.each([
    { health: 200, dropped: false },
    { health: 503, dropped: true },
  ])(
    'times a request out and retries on another; /health $health -> dropped: $dropped',
    async ({ health, dropped }) => {
      const { fakes, engine, time } = await setup(2, { requestTimeoutMs: 1234 });
      const [a, b] = fakes as [FakeVllmServer, FakeVllmServer];
      a.enqueue('/v1/completions', { kind: 'hang' });
      b.enqueue('/v1/completions', { kind: 'hang' });
      const pending = engine.sample(request);
      await vi.waitFor(() => expect(a.hanging + b.hanging).toBe(1));
      const stuck = a.hanging === 1 ? a : b;
      (stuck === a ? b : a).script.clear(); // only the first attempt hangs
      stuck.healthStatus = health;
      time.fireTimeouts();
      await expect(pending).resolves.toHaveLength(2);
      const healthy = engine.stats().replicas.find((r) => r.url === stuck.url)?.healthy;
      expect(healthy).toBe(!dropped);
    },
  );

  it('reports a timeout clearly once attempts are exhausted', async () => {
    const { fakes, engine, time } = await setup(1, {
      requestTimeoutMs: 1234,
      retry: { attempts: 1 },
    });
    const [a] = fakes as [FakeVllmServer];
    a.enqueue('/v1/completions', { kind: 'hang' });
    const pending = engine.sample(request).catch((e: unknown) => e);
    await vi.waitFor(() => expect(a.hanging).toBe(1));
    time.fireTimeouts();
    const error = (await pending) as EngineError;
    expect(error).toBeInstanceOf(EngineError);
    expect(error.code).toBe('ANNEAL_ERR_ENGINE_TIMEOUT');
    expect(error.message).toBe(
      `vLLM endpoint 'vllm-pool' (${a.url}/v1/completions): no reply within 1234 ms`,
    );
  });

  it('close aborts requests in flight and refuses new ones', async () => {
    const { fakes, engine } = await setup(1);
    const [a] = fakes as [FakeVllmServer];
    a.enqueue('/v1/completions', { kind: 'hang' });
    const pending = engine.sample(request).catch((e: unknown) => e);
    await vi.waitFor(() => expect(a.hanging).toBe(1));
    await engine.close();
    expect(String(await pending)).toContain("vLLM endpoint 'vllm-pool' is closed");
    await expect(engine.sample(request)).rejects.toThrow('is closed');
    expect(completions(a)).toBe(1);
  });

  it('retries a dropped connection and names the cause when every replica is gone', async () => {
    const { fakes, engine } = await setup(1);
    const [a] = fakes as [FakeVllmServer];
    a.enqueue('/v1/completions', { kind: 'drop' });
    await expect(engine.sample(request)).resolves.toHaveLength(2); // dropped, re-admitted by /health
    await a.stop();
    const error = (await engine.sample(request).catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_ENGINE_NO_HEALTHY_REPLICA');
    expect(error.message).toContain(`no healthy replica (all of ${a.url} failed`);
    expect(error.message).toContain('gave up after 3 attempts');
  });
});
