// The production path end to end, through the REST API: a control plane and a worker (in
// process) driving servers that answer the way the real ones do — the faithful vLLM fake in both
// generations (v0.11.x without load_inplace, current main) and the SkyRL flavour of the Tinker
// fake, which writes its sampler exports as `{base}/{model_id}/sampler_weights/{name}.tar.gz`
// like SkyRL. A GRPO run of a few steps must succeed on each: weights unpacked into the adapter
// directory, a new versioned adapter per step, unique export names, long-polled futures.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningControlPlane } from '@anneal/control-plane';
import { FakeTinkerServer, FakeVllmServer, type VllmGeneration } from '@anneal/engines/testing';
import { parseOperatorConfig } from '@anneal/protocol';
import { type InProcessStack, restClient, startInProcessStack } from './in-process-stack.ts';

const TOKEN = 'real-engines-operator-token-0123456789';

interface Stack extends InProcessStack {
  vllm: FakeVllmServer;
  trainer: FakeTinkerServer;
  dir: string;
}
let stack: Stack | undefined;

afterEach(async () => {
  const closing = stack;
  stack = undefined;
  await closing?.close();
});

async function start(generation: VllmGeneration, serverMaxLoraRank = 32): Promise<Stack> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-real-engines-'));
  const base = path.join(dir, 'checkpoints'); // SkyRL's checkpoints base = vLLM's adapters.root
  const vllm = await FakeVllmServer.start({
    generation,
    servedModel: 'qwen3',
    vocabSize: 256,
    maxModelLen: 4096,
    maxLoraRank: serverMaxLoraRank, // --max-lora-rank; the endpoint declares 32
    stopAfter: 12,
  });
  const trainer = await FakeTinkerServer.start({
    flavor: 'skyrl',
    checkpointsBase: base,
    pendingPolls: 1,
  });
  const parsed = parseOperatorConfig(`
pools: { default: { slots: 1 } }
inference:
  vllm:
    type: vllm
    replicas: ["${vllm.url}"]
    servedModel: qwen3
    maxLoraRank: 32
    adapters: { root: "${base}" }
trainers:
  skyrl:
    type: tinker
    url: ${trainer.url}
    backend: skyrl-jax
    capabilities: { kinds: [sft, grpo], losses: [cross_entropy, importance_sampling], reduction: mean_per_sequence }
search: { local: { type: local } }
baseModels:
  qwen: { model: Qwen/Qwen3-30B-A3B-Instruct-2507, tokenizer: byte }
defaults: { pool: default, inference: vllm, trainer: skyrl, search: local, baseModel: qwen }
tenants: { acme: {} }
tokens:
  - { name: op, sha256: "${createHash('sha256').update(TOKEN).digest('hex')}", role: operator, tenant: acme }
`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const operator = parsed.value;
  const started = await startInProcessStack({
    operator,
    name: `real-engines-${generation}`,
    dir,
    engines: [vllm, trainer],
  });
  stack = { ...started, vllm, trainer, dir };
  return stack;
}

const api = <T>(plane: RunningControlPlane, method: string, url: string, body?: string) =>
  restClient(plane, TOKEN).api<T>(method, url, body);
const finished = (plane: RunningControlPlane, id: string) => restClient(plane, TOKEN).finished(id);

const GRPO = `kind: grpo
steps: 3
checkpointInterval: 3
rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 16, temperature: 1 }
`;

describe.each(['v0.11', 'current'] as const)(
  'GRPO on vLLM %s + SkyRL (faithful fakes)',
  (generation) => {
    it('runs a few steps through the REST API with weights synced every step', async () => {
      const { plane, vllm, trainer, dir } = await start(generation);
      const submitted = await api<{ id: string }>(plane, 'POST', '/v1/runs', GRPO);
      expect(submitted.status).toBe(201);
      const run = await finished(plane, submitted.body.id);
      expect(run, JSON.stringify(run)).toMatchObject({ state: 'succeeded' });

      const steps = await api<{
        steps: Array<{ step: number; metrics: Record<string, number | null> }>;
      }>(plane, 'GET', `/v1/runs/${submitted.body.id}/metrics`);
      expect(steps.body.steps.map((s) => s.step)).toEqual([1, 2, 3]);
      // SkyRL reports its grad norm as skyrl.ai/grad_norm; every step has one.
      for (const s of steps.body.steps) expect(s.metrics['grad_norm']).toBeTypeOf('number');

      // One export name per step (SkyRL answers 409 to a reused name) ...
      const saves = trainer.requestsTo('save_weights_for_sampler') as Array<{ path: string }>;
      expect(new Set(saves.map((s) => s.path)).size).toBe(saves.length);
      // ... unpacked from SkyRL's .tar.gz into the directory vLLM loads ...
      const loads = vllm
        .requestsTo('/v1/load_lora_adapter')
        .map((r) => r.body as { lora_name: string; lora_path: string; load_inplace?: boolean });
      expect(loads.length).toBeGreaterThanOrEqual(3);
      for (const load of loads) {
        expect(load.lora_path.startsWith(path.join(dir, 'checkpoints'))).toBe(true);
        expect(load.lora_path.endsWith('.tar.gz')).toBe(false);
        // The fake read adapter_config.json there at load; once the run ended and every name
        // was unloaded, the unpacked directory is removed (SkyRL's archive is its retention's).
        expect(existsSync(load.lora_path)).toBe(false);
        expect(load.load_inplace).toBeUndefined();
      }
      expect(vllm.adapters.size).toBe(0);
      // ... each under its own versioned name (v0.11 would refuse a second load of one name).
      expect(new Set(loads.map((l) => l.lora_name)).size).toBe(loads.length);
      // Rollouts sampled from the served adapters, never from a name that was not loaded.
      const sampledFrom = new Set(vllm.completedModels);
      for (const model of sampledFrom) {
        expect(model === 'qwen3' || loads.some((l) => l.lora_name === model)).toBe(true);
      }
    }, 120_000);
  },
);

describe('a vLLM server whose --max-lora-rank is below what the operator declared', () => {
  it("fails the run at once with the server's words, without retrying it", async () => {
    const { plane } = await start('current', 16);
    const submitted = await api<{ id: string }>(plane, 'POST', '/v1/runs', GRPO);
    const run = (await finished(plane, submitted.body.id)) as {
      state: string;
      attempt: number;
      error?: string;
    };
    expect(run.state).toBe('failed');
    expect(run.attempt).toBe(1);
    expect(run.error).toMatch(
      /ANNEAL_ERR_ENGINE_BAD_ADAPTER.*LoRA rank 32 is greater than max_lora_rank 16/,
    );
  }, 120_000);
});
