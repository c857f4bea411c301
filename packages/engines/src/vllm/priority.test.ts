// Request priority (docs/engines.md "Request priority"): the client sends `priority` only to an
// endpoint declared `schedulingPolicy: priority`, and the fake's waiting queue takes requests as
// vLLM's v1 scheduler does (test/vllm/sched-queue.ts: `--max-num-seqs` sequences running,
// the rest waiting by (priority, arrival) under `priority`, by arrival under `fcfs`;
// vllm/v1/core/sched/request_queue.py@0097c7ed, vllm/v1/request.py@dba83d52 `__lt__`).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import type { FakeVllmOptions } from '../../test/vllm/fake-server.ts';
import { COMPLETIONS_ROUTE, VllmInferenceEngine } from './client.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function setup(schedulingPolicy: 'fcfs' | 'priority', fakeOptions: FakeVllmOptions = {}) {
  const fake = await FakeVllmServer.start(fakeOptions);
  open.push(fake);
  const engine = new VllmInferenceEngine(
    {
      name: 'gen',
      replicas: [fake.url],
      model: 'base-model',
      schedulingPolicy,
      healthCheckIntervalMs: 0,
      retry: { attempts: 1 },
    },
    { timers: fakeTimers().timers },
  );
  open.push(engine);
  return { fake, engine };
}

const request = (i: number, priority?: number) => ({
  prompt: [1, 2, i],
  n: 1,
  maxTokens: 2,
  temperature: 1,
  topP: 1,
  ...(priority !== undefined && { priority }),
});

describe('vLLM request priority', () => {
  it('is sent only to an endpoint declared schedulingPolicy: priority', async () => {
    const fcfs = await setup('fcfs');
    await fcfs.engine.sample(request(0, 7));
    expect(fcfs.fake.requestsTo(COMPLETIONS_ROUTE)[0]?.body).not.toHaveProperty('priority');

    const priority = await setup('priority');
    await priority.engine.sample(request(0, 7));
    await priority.engine.sample(request(1));
    const bodies = priority.fake.requestsTo(COMPLETIONS_ROUTE).map((r) => r.body);
    expect(bodies[0]).toMatchObject({ priority: 7 });
    expect(bodies[1]).not.toHaveProperty('priority');
  });

  it('a request priority that is not an integer is refused before any HTTP', async () => {
    const { fake, engine } = await setup('priority');
    await expect(engine.sample(request(0, 1.5))).rejects.toThrow(/`priority` must be an integer/);
    expect(fake.requestsTo(COMPLETIONS_ROUTE)).toHaveLength(0);
  });

  it.each([
    // Lower value first, ties by arrival: arrivals 0 (holds the seat), then 1..4 wait.
    ['priority', [0, 2, 4, 1, 3]],
    // Arrival order; the priority sent is ignored (vLLM v1 neither honours nor refuses it).
    ['fcfs', [0, 1, 2, 3, 4]],
  ] as const)('the fake admits waiting requests in %s order', async (policy, order) => {
    const { fake } = await setup(policy, { maxNumSeqs: 1, schedulingPolicy: policy });
    const gate = fake.holdCompletions();
    const priorities = [5, 5, 1, 5, 1];
    const post = (i: number) =>
      fetch(`${fake.url}${COMPLETIONS_ROUTE}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'base-model',
          prompt: [i + 1],
          max_tokens: 1,
          priority: priorities[i],
        }),
      });
    // Sent one by one so the arrival order is the index.
    const replies: Array<Promise<Response>> = [];
    for (let i = 0; i < priorities.length; i++) {
      replies.push(post(i));
      await vi.waitFor(() => expect(fake.requestsTo(COMPLETIONS_ROUTE)).toHaveLength(i + 1));
    }
    expect(fake.scheduler?.runningSeqs).toBe(1);
    expect(fake.scheduler?.waitingRequests).toBe(4);
    gate.release();
    const statuses = (await Promise.all(replies)).map((r) => r.status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(fake.scheduler?.started).toEqual(order);
    expect(fake.scheduler?.peakRunning).toBe(1);
  });

  it('a completion holds one seat per choice (parallel sampling adds n child requests)', async () => {
    const { fake, engine } = await setup('fcfs', { maxNumSeqs: 4 });
    const gate = fake.holdCompletions();
    const first = engine.sample({ ...request(0), n: 3 });
    await vi.waitFor(() => expect(fake.scheduler?.runningSeqs).toBe(3));
    const second = engine.sample({ ...request(1), n: 2 });
    await vi.waitFor(() => expect(fake.scheduler?.waitingRequests).toBe(1));
    gate.release();
    await Promise.all([first, second]);
    expect(fake.scheduler?.peakRunning).toBe(3);
    expect(fake.scheduler?.started).toEqual([0, 1]);
  });

  it('the fake refuses a priority that is not an integer, as vLLM validates the field', async () => {
    const { fake } = await setup('priority', { maxNumSeqs: 1, schedulingPolicy: 'priority' });
    const reply = await fetch(`${fake.url}${COMPLETIONS_ROUTE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'base-model', prompt: [1], priority: 'high' }),
    });
    expect(reply.status).toBe(400);
  });
});
