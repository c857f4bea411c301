// Future polling against both real server behaviours (fake clock, nothing waits): SkyRL's
// 300 s hold before its 408, one deadline per operation instead of a retry count, network
// errors retried until that deadline, and hosted Tinker's try_again / 410 / {error, category}
// / status-less POST replies.
import { afterEach, describe, expect, it } from 'vitest';
import { adam, startTinker } from '../../test/tinker-harness.ts';
import type { EngineError } from '../http/errors.ts';
import type { TinkerEndpointConfig } from './config.ts';
import type { FakeTinkerOptions } from '../../test/tinker/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});
const setup = (server: FakeTinkerOptions = {}, config: Partial<TinkerEndpointConfig> = {}) =>
  startTinker(open, server, config);

const HOLD = 300_000;

describe('futures against SkyRL (408 after a 300 s hold)', () => {
  it('waits out an operation of 20 minutes: each poll outlasts the hold', async () => {
    const { engine, time, fake } = await setup({ holdMs: HOLD, pendingPolls: 4 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const result = await model.optimStep(adam);
    expect(result.gradNorm).toBe(1);
    expect(fake.requestsTo('retrieve_future')).toHaveLength(5); // 4 held 408s, then the result
    expect(time.timers.now()).toBeGreaterThanOrEqual(4 * HOLD);
    // Every retrieve_future call may run 330 s (> the 300 s hold); other calls keep 60 s.
    expect(time.timeouts.filter((ms) => ms > 60_000)).toEqual([
      330_000, 330_000, 330_000, 330_000, 330_000,
    ]);
  });

  it('bounds the wait by the per-operation deadline, not by a number of tries', async () => {
    const { engine, time, fake } = await setup(
      { holdMs: HOLD, pendingPolls: 1_000_000 },
      { futurePoll: { deadlineMs: 1_000_000 } },
    );
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const error = (await model.optimStep(adam).catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_FUTURE_TIMEOUT');
    expect(error.message).toMatch(/operation deadline 1000000 ms/);
    // Three full holds fit; the fourth call is cut to what is left of the deadline.
    expect(fake.requestsTo('retrieve_future')).toHaveLength(4);
    expect(time.timeouts.filter((ms) => ms > 60_000).slice(0, 3)).toEqual([
      330_000, 330_000, 330_000,
    ]);
    expect(time.timers.now()).toBeGreaterThanOrEqual(1_000_000);
  });

  it('retries dropped connections while polling until the deadline, not 5 times', async () => {
    const { engine, fake, events } = await setup({ pendingPolls: 1 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const drops = Array.from({ length: 8 }, () => ({ kind: 'drop' as const }));
    fake.enqueue('retrieve_future', ...drops);
    const result = await model.optimStep(adam);
    expect(result.gradNorm).toBe(1);
    const retries = events.filter((e) => e.type === 'future:poll_retry');
    expect(retries).toHaveLength(8);
    const delays = retries.map((e) => (e.type === 'future:poll_retry' ? e.delayMs : 0));
    expect(delays[3]).toBeGreaterThan(delays[0] as number); // backoff grows
    expect(fake.requestsTo('retrieve_future')).toHaveLength(10); // 8 drops, 1 pending, result
  });

  it('fails at once on a 4xx other than the polling statuses (e.g. a bad API key)', async () => {
    const { engine, fake } = await setup({ pendingPolls: 1 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.enqueue('retrieve_future', {
      kind: 'reply',
      status: 401,
      body: { detail: 'Invalid API key' },
    });
    await expect(model.optimStep(adam)).rejects.toThrow('HTTP 401: Invalid API key');
    expect(fake.requestsTo('retrieve_future')).toHaveLength(1);
  });
});

describe('futures against hosted Tinker', () => {
  const tinker = (options: FakeTinkerOptions = {}) =>
    setup({ flavor: 'tinker', gradNorm: 'anneal', ...options });

  it('polls again on 200 try_again and reads POST futures without a status field', async () => {
    const { engine, fake, events } = await tinker({ pendingPolls: 2 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    expect(model.id).toMatch(/^model-/); // create_model itself was a future
    const result = await model.optimStep(adam);
    expect(result).toEqual({ gradNorm: 1, metrics: { 'grad_norm:last': 1 } });
    const pending = events.filter((e) => e.type === 'future:pending');
    expect(pending.at(-1)).toMatchObject({ queueState: 'active' });
    const optimFuture = fake.requests.filter((r) => r.route === 'retrieve_future').slice(-3);
    expect(optimFuture.map((r) => (r.body as { request_id: string }).request_id)).toHaveLength(3);
  });

  it('reports an expired promise (410) with its own code', async () => {
    const { engine, fake } = await tinker({ pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.expireNextFuture = true;
    const error = (await model.optimStep(adam).catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_FUTURE_EXPIRED');
    expect(error.message).toMatch(
      /optim_step \(model model-\d+, seq_id 1\): request req-\d+ expired/,
    );
    expect(error.status).toBe(410);
  });

  it('reports a 200 {error, category} as a failed operation, with its category', async () => {
    const { engine, fake } = await tinker({ pendingPolls: 1 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.failNextFuture = 'learning rate must be finite';
    const error = (await model.optimStep(adam).catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_FUTURE_FAILED');
    expect(error.message).toMatch(/failed \[user error\]: learning rate must be finite$/);
  });

  it('retries a bare 400 (a proxy, not the server) at most 3 times', async () => {
    const { engine, fake } = await tinker({ pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const bare = { kind: 'reply' as const, status: 400, body: undefined };
    fake.enqueue('retrieve_future', bare, bare, bare);
    await expect(model.optimStep(adam)).resolves.toMatchObject({ gradNorm: 1 });
    fake.enqueue('retrieve_future', bare, bare, bare, bare);
    const error = (await model.optimStep(adam).catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_FUTURE_FAILED');
    expect(error.status).toBe(400);
  });
});
