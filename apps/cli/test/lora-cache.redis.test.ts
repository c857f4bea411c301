// Two GRPO runs of 20 steps at once on one vLLM deployment of the current (main) generation with
// `--max-loras 2` (the shipped manifests' value) and vLLM's default `--max-cpu-loras` (= max
// loras): the fake's LoRA cache evicts superseded policy versions before Anneal unloads them, and
// main answers such an unload 500 with the name still listed
// (vllm/entrypoints/openai/models/serving.py@00153c8b `unload_lora_adapter`; test/vllm/
// lora-cache.ts for the cache). Mid-run every replica drops a request and fails one /health
// check. The runs must succeed, leak no adapter name, retry no sync, serve every name after the
// blip, and leave on disk only the sampler exports SkyRL still lists (its DELETE removes only
// `{name}.tar.gz`, skyrl/tinker/api.py@a9564572e `delete_checkpoint_file`; Anneal removes what it
// unpacked). docs/engines.md "Conformance" (vLLM rows).
import { createHash } from 'node:crypto';
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeTinkerServer, FakeVllmServer } from '@anneal/engines/testing';
import { parseOperatorConfig } from '@anneal/protocol';
import { type InProcessStack, restClient, startInProcessStack } from './in-process-stack.ts';

const TOKEN = 'lora-cache-operator-token-0123456789';
const STEPS = 20;

let stack: InProcessStack | undefined;
afterEach(async () => {
  const closing = stack;
  stack = undefined;
  await closing?.close();
});

/** Every file under `dir`, relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describe('GRPO against vLLM main with --max-loras 2', () => {
  it(`two ${STEPS}-step runs on one server: no leaked name, no sync retry, a blip survived, only retained exports on disk`, async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'anneal-lora-cache-'));
    const base = path.join(dir, 'checkpoints');
    const replicas = await Promise.all(
      [0, 1].map(() =>
        FakeVllmServer.start({
          generation: 'current',
          maxLoras: 2,
          servedModel: 'qwen3',
          vocabSize: 256,
          maxLoraRank: 32,
          stopAfter: 12,
        }),
      ),
    );
    const trainer = await FakeTinkerServer.start({ flavor: 'skyrl', checkpointsBase: base });
    const parsed = parseOperatorConfig(`
pools: { default: { slots: 2 } }
inference:
  vllm:
    type: vllm
    replicas: [${replicas.map((r) => `"${r.url}"`).join(', ')}]
    servedModel: qwen3
    maxLoraRank: 32
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
tenants: { acme: {} }
tokens:
  - { name: op, sha256: "${createHash('sha256').update(TOKEN).digest('hex')}", role: operator, tenant: acme }
`);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    stack = await startInProcessStack({
      operator: parsed.value,
      name: 'lora-cache',
      dir,
      engines: [...replicas, trainer],
    });
    const client = restClient(stack.plane, TOKEN);
    const spec = `kind: grpo
steps: ${STEPS}
checkpointInterval: 5
rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 16, temperature: 1 }
`;
    const ids: string[] = [];
    const references = new Set<string>();
    for (let k = 0; k < 2; k += 1) {
      const submitted = await client.api<{
        id: string;
        adapterDemand: Array<{ reference: string }>;
      }>('POST', '/v1/runs', spec);
      expect(submitted.status).toBe(201);
      ids.push(submitted.body.id);
      references.add(submitted.body.adapterDemand[0]!.reference);
    }
    // One start, one tenant: one shared reference (docs/operations.md "Shared references").
    expect(references.size).toBe(1);

    // The blip, mid-run: each replica drops one completion (out of rotation at once) and then
    // fails one /health check, so re-admission waits for a second check and resyncs.
    await vi.waitFor(
      () => expect(replicas.every((r) => r.completedModels.length >= 20)).toBe(true),
      { timeout: 60_000, interval: 50 },
    );
    const blipAt = replicas.map((r) => r.completedModels.length);
    for (const replica of replicas) {
      replica.enqueue('/v1/completions', { kind: 'drop' });
      replica.enqueue('/health', { kind: 'reply', status: 503, body: undefined });
    }

    for (const id of ids) {
      const run = await client.finished(id);
      expect(run, JSON.stringify(run)).toMatchObject({ state: 'succeeded' });
    }

    // The blip happened and each replica came back: it answered the 503 and served after it.
    for (const [i, replica] of replicas.entries()) {
      expect(replica.requestsTo('/health').some((q) => q.status === 503)).toBe(true);
      expect(replica.completedModels.length).toBeGreaterThan((blipAt[i] as number) + 1);
    }
    // Every run's policy and the shared reference were served after it.
    const after = replicas.flatMap((r, i) => r.completedModels.slice(blipAt[i]));
    for (const id of ids) expect(after.some((m) => m.startsWith(`${id}-policy@`))).toBe(true);
    const [reference] = [...references];
    expect(after.some((m) => m.startsWith(`${reference}@shared.`))).toBe(true);

    // The last run's worker unloads the shared reference once that run has ended (in its
    // `finally`, after the run's state is written: worker runtime/process-run.ts), so the test
    // waits for the names to go instead of racing that unload.
    await vi.waitFor(
      () => {
        for (const replica of replicas) expect([...replica.adapters.keys()]).toEqual([]);
      },
      { timeout: 30_000, interval: 50 },
    );
    for (const replica of replicas) {
      // The cache was exercised: versions were evicted before their unload ...
      expect(replica.lora.cache?.evicted.length).toBeGreaterThan(0);
      expect(replica.lora.cache?.peakRunning).toBeLessThanOrEqual(2);
      // ... yet no name is left once both runs ended ...
      expect([...replica.adapters.keys()]).toEqual([]);
      // ... and no unload was retried: each 500 "Failed to remove" is followed, for that name,
      // by a load in place and one more unload, never by a blind resend.
      const lora = replica.requests.filter((q) => q.path.includes('lora_adapter'));
      lora.forEach((q, k) => {
        if (q.path !== '/v1/unload_lora_adapter' || q.status !== 500) return;
        const name = (q.body as { lora_name: string }).lora_name;
        const next = lora
          .slice(k + 1)
          .find((n) => (n.body as { lora_name: string }).lora_name === name);
        expect(next?.path).toBe('/v1/load_lora_adapter');
        expect(next?.body).toMatchObject({ load_inplace: true });
      });
      const failedLoads = lora.filter(
        (q) => q.path === '/v1/load_lora_adapter' && q.status !== 200,
      );
      expect(failedLoads).toEqual([]);
    }

    // On disk: only the sampler exports SkyRL still lists (retention deleted the others' archives
    // through its API); no unpacked directory, no file of a deleted export.
    const kept = [...trainer.models]
      .flatMap(([modelId, model]) =>
        [...model.sampler.keys()].map((name) =>
          path.join(modelId, 'sampler_weights', `${name}.tar.gz`),
        ),
      )
      .sort();
    expect(await filesUnder(base)).toEqual(kept);
    const unpacked = (await readdir(base, { recursive: true, withFileTypes: true })).filter(
      (e) => e.isDirectory() && path.basename(e.parentPath) === 'sampler_weights',
    );
    expect(unpacked.map((d) => d.name)).toEqual([]);
  }, 240_000);
});
