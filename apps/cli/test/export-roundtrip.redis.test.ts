// Export round trip: a GRPO run on the embedded engines through a real control plane
// and worker; `anneal runs export` (the CLI's function over real HTTP) takes checkpoint 1 out; the
// exported ONNX model, loaded into a fresh embedded sampler (onnxruntime-node), answers every
// seeded request the run's policy after step 1 answered — the rollouts of step 2 — with exactly
// the same tokens and logprobs. The worker's sampler is wrapped to record what it served from
// which weights; nothing is recomputed by hand.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  EmbeddedInferenceEngine,
  type InferenceEngine,
  type SampleRequest,
  type SampledSequence,
} from '@anneal/engines';
import { type CheckpointList, localOperatorConfig } from '@anneal/protocol';
import { engineArtifactDir } from '@anneal/store';
import { defaultEmbeddedEngines } from '@anneal/worker';
import { ApiClient } from '../src/api/client.ts';
import { exportCheckpoint } from '../src/commands/export.ts';
import { type InProcessStack, restClient, startInProcessStack } from './in-process-stack.ts';

const TOKEN = 'export-roundtrip-operator-token-0123456789';

interface Served {
  request: SampleRequest;
  /** The sampler export the request's weights were loaded from. */
  path: string | undefined;
  result: SampledSequence[];
}

/** The embedded sampler, recording each sample with the export its weights came from. */
function recording(engine: InferenceEngine, served: Served[]): InferenceEngine {
  const loaded = new Map<string, string>();
  return {
    async loadWeights(weights) {
      await engine.loadWeights(weights);
      loaded.set(weights.name, weights.path);
    },
    async sample(request, signal) {
      // the weights the request starts on (a next version may be loaded while it runs)
      const from = request.model === undefined ? undefined : loaded.get(request.model);
      // a copy: the rollout loop grows its token arrays in place for the next turn
      const asked = structuredClone(request);
      const result = await engine.sample(request, signal);
      served.push({ request: asked, path: from, result });
      return result;
    },
    ...(engine.releaseWeights && { releaseWeights: (name) => engine.releaseWeights!(name) }),
    close: () => engine.close(),
  };
}

let stack: InProcessStack;
let dir: string;
const served: Served[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-export-'));
  const operator = localOperatorConfig(createHash('sha256').update(TOKEN).digest('hex'));
  const embedded = defaultEmbeddedEngines({
    trainerDirs: [engineArtifactDir(path.join(dir, 'worker'), 'embedded')],
  });
  stack = await startInProcessStack({
    operator,
    name: 'export-roundtrip',
    dir,
    engines: [],
    factories: {
      embedded: {
        ...embedded,
        inference: async (options) => recording(await embedded.inference(options), served),
      },
    },
  });
}, 60_000);
afterAll(() => stack?.close());

it('an exported checkpoint samples exactly what the run policy sampled at that step', async () => {
  const { api, finished } = restClient(stack.plane, TOKEN);
  const created = await api<{ id: string }>(
    'POST',
    '/v1/runs',
    [
      'kind: grpo',
      'steps: 2',
      'checkpointInterval: 1',
      'rollout: { groupSize: 4, promptsPerStep: 2, maxTokens: 40 }',
      // large enough that step 2 moves the weights: the test tells checkpoints apart
      'optimizer: { learningRate: 0.01 }',
    ].join('\n'),
  );
  expect(created.status).toBe(201);
  const runId = created.body.id;
  expect((await finished(runId, 180_000)).state).toBe('succeeded');

  const client = new ApiClient({ url: stack.plane.url, token: TOKEN });
  const out = path.join(dir, 'export');
  const manifest = await exportCheckpoint(client, runId, { step: 1, out });
  expect(manifest).toMatchObject({
    format: 'anneal-export/v1',
    run: { id: runId, kind: 'grpo' },
    step: 1,
    baseModel: { name: 'tiny', model: 'embedded:tiny' },
    weights: { format: 'onnx', trainer: 'embedded' },
  });
  expect(manifest.specSha256).toMatch(/^[0-9a-f]{64}$/);
  expect(manifest.metrics?.['reward/all']).toEqual(expect.any(Number));
  expect((await readdir(out)).sort()).toEqual(['manifest.json', ...manifest.weights.files].sort());
  expect(JSON.parse(await readFile(path.join(out, 'manifest.json'), 'utf8'))).toEqual(manifest);
  const list = (await api<CheckpointList>('GET', `/v1/runs/${runId}/checkpoints`)).body;
  expect(list.checkpoints.find((c) => c.step === 1)?.samplerPath).toBe(
    manifest.weights.samplerPath,
  );

  // What the policy after step 1 (export `<run>-sampler-1`) sampled: step 2's rollouts.
  const policyAfterStep1 = served.filter(
    (s) => s.path?.endsWith(`${runId}-sampler-1`) && s.request.seed !== undefined,
  );
  expect(policyAfterStep1.length).toBeGreaterThan(0);
  // Without --step: the latest kept checkpoint (step 2), whose weights differ.
  const latest = path.join(dir, 'latest');
  expect((await exportCheckpoint(client, runId, { out: latest })).step).toBe(2);
  const sampler = new EmbeddedInferenceEngine({ threads: 1 });
  try {
    await sampler.loadWeights({ name: 'exported', path: out });
    await sampler.loadWeights({ name: 'step-2', path: latest });
    let differs = 0;
    for (const { request, result } of policyAfterStep1) {
      expect(await sampler.sample({ ...request, model: 'exported' })).toEqual(result);
      const other = await sampler.sample({ ...request, model: 'step-2' });
      if (JSON.stringify(other) !== JSON.stringify(result)) differs++;
    }
    // The match is the checkpoint's, not any weights': step 2's export answers otherwise.
    expect(differs).toBeGreaterThan(0);
  } finally {
    await sampler.close();
  }

  // A step never checkpointed is a problem, not an archive.
  await expect(
    exportCheckpoint(client, runId, { step: 7, out: path.join(dir, 'x') }),
  ).rejects.toMatchObject({
    problem: { code: 'ANNEAL_ERR_CHECKPOINT_NOT_FOUND', status: 404 },
  });
}, 240_000);
