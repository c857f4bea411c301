// Export of a checkpoint saved on a Tinker-compatible trainer: the control plane downloads the
// sampler export's archive from the trainer (the fake of @anneal/engines/testing, answering as
// SkyRL and as hosted Tinker do: fake-flavors.ts cites the upstream files) with the endpoint's
// API key, and the tar it answers holds the PEFT adapter (adapter_config.json +
// adapter_model.safetensors) and a manifest saying `peft-lora`.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { x as extract } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { TinkerTrainerEngine } from '@anneal/engines';
import { FakeTinkerServer } from '@anneal/engines/testing';
import type { ExportManifest, RunResource } from '@anneal/protocol';
import { appendStep, setCheckpoint, startRun } from '@anneal/store';
import {
  TOKENS,
  type TestPlane,
  auth,
  submit,
  testOperatorConfig,
  testPlane,
} from '../../test/helpers.ts';

const KEY = 'fake-trainer-key';
const open: Array<{ close(): Promise<void> }> = [];
let plane: TestPlane | undefined;
let dir: string | undefined;
afterEach(async () => {
  await plane?.cleanup();
  await Promise.all(open.splice(0).map((x) => x.close()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each([
  ['skyrl', 'skyrl-jax', 'mean_per_sequence'],
  ['tinker', 'tinker', 'sum'],
] as const)('export from a %s trainer', (flavor, backend, reduction) => {
  it('downloads the export archive and answers the LoRA adapter with its manifest', async () => {
    const fake = await FakeTinkerServer.start({ flavor, apiKey: KEY });
    open.push(fake);
    const capabilities = { kinds: ['sft' as const], losses: ['cross_entropy' as const], reduction };
    const engine = await TinkerTrainerEngine.connect({
      name: 'hosted',
      baseUrl: fake.url,
      apiKey: KEY,
      capabilities,
      heartbeatIntervalMs: 0,
    });
    open.push(engine);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const saved = await model.saveWeights('run-step-000001');
    const exported = await model.saveWeightsForSampler('run-step-000001-sampler');

    const base = testOperatorConfig();
    plane = await testPlane({
      operator: testOperatorConfig({
        trainers: {
          ...base.trainers,
          hosted: {
            type: 'tinker',
            url: fake.url,
            backend,
            apiKeyEnv: 'HOSTED_KEY',
            capabilities,
          },
        },
      }),
      trainerApiKeys: { hosted: KEY },
    });
    const created = await submit(plane.app, 'kind: sft\nsteps: 1\nendpoints: {trainer: hosted}');
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json<RunResource>().id;
    const started = await startRun(plane.store, id, 'w1');
    if (started.status !== 'started') throw new Error('start');
    const { attempt } = started;
    await appendStep(plane.store, id, 1, { loss: 0.5 }, { attempt });
    const checkpoint = { step: 1, path: saved, samplerPath: exported.path };
    expect(await setCheckpoint(plane.store, id, checkpoint, { attempt })).toBe('saved');

    const res = await plane.app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/checkpoints/1/export`,
      headers: auth(TOKENS.acmeViewer),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-tar');
    dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-export-tinker-'));
    const archive = path.join(dir, 'export.tar');
    await writeFile(archive, res.rawPayload);
    const out = path.join(dir, 'out');
    await mkdir(out);
    await extract({ file: archive, cwd: out, strict: true });
    const manifest = JSON.parse(
      await readFile(path.join(out, 'manifest.json'), 'utf8'),
    ) as ExportManifest;
    expect(manifest.weights).toEqual({
      format: 'peft-lora',
      files: ['adapter_config.json', 'adapter_model.safetensors'],
      trainer: 'hosted',
      samplerPath: exported.path,
    });
    expect(JSON.parse(await readFile(path.join(out, 'adapter_config.json'), 'utf8'))).toMatchObject(
      {
        peft_type: 'LORA',
        r: 8,
        // stated from the tensor keys (adapters/peft-modules.ts)
        target_modules: ['q_proj'],
      },
    );
    expect(await readFile(path.join(out, 'adapter_model.safetensors'), 'utf8')).toContain(
      `${model.id}/run-step-000001-sampler`,
    );
  });
});
