// Shared references end to end (docs/operations.md "Shared references"): two GRPO runs of one
// tenant from the same base model, and one of another tenant from the same base, on one vLLM
// server of the current (main) generation and one SkyRL trainer, run by two worker processes'
// worth of workers. The first tenant's runs score against one reference adapter, loaded once
// (under a name of their shared reference, never `<runId>-reference`) and unloaded once the
// second of them ends; the other tenant gets a reference of its own; every completion is served
// by the adapter it asked for (the fake records it, vllm/entrypoints/openai/serving_completion.py
// @00463e62 names the adapter a request resolved to); no adapter is left listed by
// GET /v1/models (vllm/entrypoints/openai/models/serving.py@00153c8b `show_available_models`).
import { createHash } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeTinkerServer, FakeVllmServer } from '@anneal/engines/testing';
import { parseOperatorConfig } from '@anneal/protocol';
import { createLogger } from '@anneal/telemetry';
import { defineWorkerConfig, startWorker, type WorkerHandle } from '@anneal/worker';
import { REDIS_URL } from './cli-process.ts';
import { type InProcessStack, restClient, startInProcessStack } from './in-process-stack.ts';

const ACME = 'shared-ref-acme-token-0123456789';
const GLOBEX = 'shared-ref-globex-token-0123456789';
const sha = (token: string) => createHash('sha256').update(token).digest('hex');

let stack: InProcessStack | undefined;
let second: WorkerHandle | undefined;
afterEach(async () => {
  await second?.close();
  second = undefined;
  const closing = stack;
  stack = undefined;
  await closing?.close();
});

interface Run {
  id: string;
  state: string;
  startedAt: string;
  endedAt: string;
  adapterDemand: Array<{ reference?: string; slots: number }>;
}

const loadedName = (body: unknown) => (body as { lora_name: string }).lora_name;

describe('shared references', () => {
  it('one reference adapter per tenant and start, loaded once, unloaded with its last user', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'anneal-shared-ref-'));
    const base = path.join(dir, 'checkpoints');
    const vllm = await FakeVllmServer.start({
      generation: 'current',
      servedModel: 'qwen3',
      vocabSize: 256,
      maxLoraRank: 32,
      stopAfter: 12,
    });
    const trainer = await FakeTinkerServer.start({ flavor: 'skyrl', checkpointsBase: base });
    const parsed = parseOperatorConfig(`
pools: { default: { slots: 2 } }
inference:
  vllm:
    type: vllm
    replicas: ["${vllm.url}"]
    servedModel: qwen3
    maxLoraRank: 32
    maxLoras: 16
    adapters: { root: "${base}" }
trainers:
  skyrl:
    type: tinker
    url: ${trainer.url}
    backend: skyrl-jax
    capabilities: { kinds: [grpo], losses: [importance_sampling], reduction: mean_per_sequence }
search: { local: { type: local } }
baseModels:
  qwen: { model: Qwen/Qwen3-30B-A3B-Instruct-2507, tokenizer: byte }
defaults: { pool: default, inference: vllm, trainer: skyrl, search: local, baseModel: qwen }
tenants: { acme: {}, globex: {} }
tokens:
  - { name: acme, sha256: "${sha(ACME)}", role: submitter, tenant: acme }
  - { name: globex, sha256: "${sha(GLOBEX)}", role: submitter, tenant: globex }
`);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    stack = await startInProcessStack({
      operator: parsed.value,
      name: 'shared-ref',
      dir,
      engines: [vllm, trainer],
    });
    // A second worker (an engine of its own, as a second process would have) on the same pool.
    second = await startWorker(
      defineWorkerConfig({
        redisUrl: REDIS_URL,
        keyPrefix: stack.prefix,
        pool: 'default',
        workerId: 'shared-ref-2',
        operatorConfig: parsed.value,
        artifactDir: path.join(dir, 'worker'),
        metrics: { port: 0, host: '127.0.0.1' },
      }),
      { logger: createLogger({ name: 'test', level: 'silent' }) },
    );
    const acme = restClient(stack.plane, ACME);
    const globex = restClient(stack.plane, GLOBEX);
    const spec = (seed: number) => `kind: grpo
seed: ${seed}
steps: 4
checkpointInterval: 2
rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 16, temperature: 1 }
reference: { cacheGenerations: false }
`;
    const submitted = await Promise.all([
      acme.api<Run>('POST', '/v1/runs', spec(1)),
      acme.api<Run>('POST', '/v1/runs', spec(2)),
      globex.api<Run>('POST', '/v1/runs', spec(1)),
    ]);
    for (const s of submitted) expect(s.status, JSON.stringify(s.body)).toBe(201);
    const [a, b, g] = submitted.map((s) => s.body) as [Run, Run, Run];
    const shared = a.adapterDemand[0]?.reference as string;
    const own = g.adapterDemand[0]?.reference as string;
    expect(shared).toMatch(/^ref-[0-9a-f]{16}$/);
    expect(b.adapterDemand[0]?.reference).toBe(shared);
    expect(own).toMatch(/^ref-[0-9a-f]{16}$/);
    expect(own).not.toBe(shared);

    const ended = [
      (await acme.finished(a.id, 180_000)) as unknown as Run,
      (await acme.finished(b.id, 180_000)) as unknown as Run,
      (await globex.finished(g.id, 180_000)) as unknown as Run,
    ];
    for (const run of ended) expect(run, JSON.stringify(run)).toMatchObject({ state: 'succeeded' });
    // The premise: the two runs of acme ran at the same time (two workers, two slots each).
    const [ra, rb] = ended as [Run, Run];
    expect(Date.parse(ra.startedAt)).toBeLessThan(Date.parse(rb.endedAt));
    expect(Date.parse(rb.startedAt)).toBeLessThan(Date.parse(ra.endedAt));

    const loads = vllm.requestsTo('/v1/load_lora_adapter');
    const loadedOk = loads.filter((q) => q.status === 200).map((q) => loadedName(q.body));
    // acme's reference was loaded once, as generation 1 of its shared reference; globex's too.
    expect(loadedOk.filter((n) => n.startsWith(shared))).toEqual([`${shared}@shared.1`]);
    expect(loadedOk.filter((n) => n.startsWith(own))).toEqual([`${own}@shared.1`]);
    // No run loaded a reference of its own.
    for (const run of [a, b, g]) {
      expect(loads.filter((q) => loadedName(q.body).startsWith(`${run.id}-reference`))).toEqual([]);
    }
    // Reference rollouts were sampled from the shared adapters, every request by what it named.
    const completions = (name: string) => vllm.served.filter((s) => s.requested === name).length;
    expect(completions(`${shared}@shared.1`)).toBeGreaterThan(completions(`${own}@shared.1`));
    expect(completions(`${own}@shared.1`)).toBeGreaterThan(0);
    expect(vllm.served.filter((s) => s.servedBy !== s.requested)).toEqual([]);
    // Unloaded once, after the last user ended; nothing left listed.
    const unloads = vllm
      .requestsTo('/v1/unload_lora_adapter')
      .filter((q) => q.status === 200)
      .map((q) => loadedName(q.body));
    expect(unloads.filter((n) => n.startsWith('ref-')).sort()).toEqual(
      [`${shared}@shared.1`, `${own}@shared.1`].sort(),
    );
    const models = (await (await fetch(`${vllm.url}/v1/models`)).json()) as {
      data: Array<{ id: string; parent: string | null }>;
    };
    expect(models.data.filter((m) => m.parent !== null)).toEqual([]);
  }, 240_000);
});
