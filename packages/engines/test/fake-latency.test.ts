// The fakes' compute-time knobs (benchmarks simulate production engines with them): a vLLM
// replica's generation throughput and a trainer's per-operation latency (fixed, or per call plus
// per token), both queued, over HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeTinkerServer } from './tinker/fake-server.ts';
import { TINKER_API_PREFIX } from '../src/tinker/wire.ts';
import { FakeVllmServer } from './vllm/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function post(url: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

// Timer slack: a timer never fires early, but two clocks may round differently.
const SLACK_MS = 5;

describe('FakeVllmServer tokensPerSecond', () => {
  it('answers a completion once its tokens are generated, queued behind earlier ones', async () => {
    const fake = await FakeVllmServer.start({ tokensPerSecond: 2000 });
    open.push(fake);
    const complete = async () => {
      const reply = await post(`${fake.url}/v1/completions`, {
        model: 'base-model',
        prompt: [1, 2, 3],
        n: 2,
        max_tokens: 100,
      });
      return { ...reply, at: performance.now() };
    };
    const start = performance.now();
    const [first, second] = await Promise.all([complete(), complete()]);
    expect(first.status).toBe(200);
    expect((first.body as { choices: unknown[] }).choices).toHaveLength(2);
    // 200 tokens at 2000 tokens/s = 100 ms each, one after the other
    const [early, late] = [first.at, second.at].sort((a, b) => a - b) as [number, number];
    expect(early - start).toBeGreaterThanOrEqual(100 - SLACK_MS);
    expect(late - start).toBeGreaterThanOrEqual(200 - SLACK_MS);
  });
});

describe('FakeVllmServer decodeTokensPerSecond', () => {
  it('answers a completion after one scheduler step plus its longest choice', async () => {
    const fake = await FakeVllmServer.start({ decodeTokensPerSecond: 1000 });
    open.push(fake);
    const complete = async (maxTokens: number) => {
      const reply = await post(`${fake.url}/v1/completions`, {
        model: 'base-model',
        prompt: [1, 2, 3],
        n: 4,
        max_tokens: maxTokens,
      });
      return { ...reply, at: performance.now() };
    };
    const start = performance.now();
    const [long, short] = await Promise.all([complete(200), complete(50)]);
    expect(long.status).toBe(200);
    expect((long.body as { choices: unknown[] }).choices).toHaveLength(4);
    // (1 + 200) and (1 + 50) steps at 1 ms a step: the n choices decode side by side
    expect(long.at - start).toBeGreaterThanOrEqual(201 - SLACK_MS);
    expect(short.at - start).toBeGreaterThanOrEqual(51 - SLACK_MS);
  });
});

describe('FakeTinkerServer latencyMs', () => {
  const api = (fake: FakeTinkerServer, route: string) => `${fake.url}${TINKER_API_PREFIX}/${route}`;
  const adam = { learning_rate: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12 };

  async function modelOn(fake: FakeTinkerServer): Promise<string> {
    const session = await post(api(fake, 'create_session'), { tags: [], sdk_version: '0' });
    const { session_id } = session.body as { session_id: string };
    const model = await post(api(fake, 'create_model'), {
      session_id,
      base_model: 'base',
      lora_config: { rank: 8 },
      model_seq_id: 0,
    });
    return (model.body as { model_id: string }).model_id;
  }

  it('SkyRL: holds retrieve_future until the queued operation is done, then answers it', async () => {
    const fake = await FakeTinkerServer.start({ latencyMs: { optim_step: 80 }, pendingPolls: 0 });
    open.push(fake);
    const model_id = await modelOn(fake);
    const start = performance.now();
    const submit = (seq_id: number) =>
      post(api(fake, 'optim_step'), { model_id, seq_id, adam_params: adam });
    const ids = [await submit(1), await submit(2)].map(
      (r) => (r.body as { request_id: string }).request_id,
    );
    const second = await post(api(fake, 'retrieve_future'), { request_id: ids[1] });
    expect(second.status).toBe(200);
    expect(second.body).toHaveProperty('metrics');
    // the second optim_step starts when the first is done: 2 × 80 ms
    expect(performance.now() - start).toBeGreaterThanOrEqual(160 - SLACK_MS);
  });

  it("sharedCompute: one model's operation waits for another model's before it", async () => {
    const fake = await FakeTinkerServer.start({
      latencyMs: { optim_step: 80 },
      pendingPolls: 0,
      sharedCompute: true,
    });
    open.push(fake);
    const models = [await modelOn(fake), await modelOn(fake)];
    const start = performance.now();
    const ids = [];
    for (const model_id of models) {
      const reply = await post(api(fake, 'optim_step'), { model_id, seq_id: 1, adam_params: adam });
      ids.push((reply.body as { request_id: string }).request_id);
    }
    const second = await post(api(fake, 'retrieve_future'), { request_id: ids[1] });
    expect(second.body).toHaveProperty('metrics');
    // the other model's optim_step first: 2 × 80 ms (a queue per model would take 80)
    expect(performance.now() - start).toBeGreaterThanOrEqual(160 - SLACK_MS);
  });

  it('tokenLatency: a forward costs the call plus its tokens, queued behind the one before', async () => {
    const fake = await FakeTinkerServer.start({
      tokenLatency: { callMs: 30, msPerToken: { forward: 10, forward_backward: 1000 } },
      pendingPolls: 0,
    });
    open.push(fake);
    const model_id = await modelOn(fake);
    const datum = (n: number) => {
      const tokens = Array.from({ length: n }, (_, i) => i + 1);
      return {
        model_input: { chunks: [{ type: 'encoded_text', tokens }] },
        loss_fn_inputs: {
          target_tokens: { data: tokens.map((t) => t + 1), dtype: 'int64', shape: [n] },
          weights: { data: tokens.map(() => 1), dtype: 'float32', shape: [n] },
        },
      };
    };
    const forward = (seq_id: number, data: unknown[]) =>
      post(api(fake, 'forward'), {
        model_id,
        seq_id,
        forward_input: { loss_fn: 'cross_entropy', data },
      });
    const start = performance.now();
    // 2 datums × 4 tokens, then 1 × 2: (30 + 8 × 10) + (30 + 2 × 10) = 160 ms, not 2 × 30
    const ids = [await forward(1, [datum(4), datum(4)]), await forward(2, [datum(2)])].map(
      (r) => (r.body as { request_id: string }).request_id,
    );
    const second = await post(api(fake, 'retrieve_future'), { request_id: ids[1] });
    expect(second.status).toBe(200);
    expect(second.body).toHaveProperty('loss_fn_outputs');
    expect(performance.now() - start).toBeGreaterThanOrEqual(160 - SLACK_MS);
  });

  it('hosted Tinker: answers try_again until the operation is done', async () => {
    const fake = await FakeTinkerServer.start({
      flavor: 'tinker',
      latencyMs: { optim_step: 60_000 },
      pendingPolls: 0,
    });
    open.push(fake);
    const model_id = await modelOn(fake);
    const submitted = await post(api(fake, 'optim_step'), {
      model_id,
      seq_id: 1,
      adam_params: adam,
    });
    const { request_id } = submitted.body as { request_id: string };
    const polled = await post(api(fake, 'retrieve_future'), { request_id });
    expect(polled.body).toMatchObject({ type: 'try_again', request_id });
  });
});
