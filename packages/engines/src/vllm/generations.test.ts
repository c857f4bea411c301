// The client's contract with both vLLM generations the fake mirrors (testing/fake-server.ts):
// v0.11.x (no load_inplace, "maximum context length" wording) and current main (load_inplace,
// "context length is only" wording). One RL loop each: sync SkyRL-style sampler weights, sample
// from them, sync the next step, hit the context window, release.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { VllmInferenceEngine } from './client.ts';
import { adapterPathResolver } from './lora-paths.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
let root: string | undefined;
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
  if (root) await rm(root, { recursive: true, force: true });
});

/** `{root}/{model_id}/sampler_weights/{name}.tar.gz` holding a PEFT adapter of rank `r`. */
async function skyrlSamplerArchive(base: string, modelId: string, name: string, r: number) {
  const staging = join(base, `.src-${name}`);
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, 'adapter_config.json'), JSON.stringify({ r, peft_type: 'LORA' }));
  await writeFile(join(staging, 'adapter_model.safetensors'), Buffer.alloc(128, r));
  const dir = join(base, modelId, 'sampler_weights');
  await mkdir(dir, { recursive: true });
  await create({ gzip: true, file: join(dir, `${name}.tar.gz`), cwd: staging }, ['.']);
  return join(dir, name);
}

for (const generation of ['v0.11', 'current'] as const) {
  describe(`vLLM client against ${generation}`, () => {
    it('syncs, samples from the newest version, clamps to the window and releases', async () => {
      root = await mkdtemp(join(tmpdir(), `anneal-vllm-${generation}-`));
      const fakes = await Promise.all(
        [0, 1].map(() =>
          FakeVllmServer.start({ generation, maxModelLen: 16, reportMaxModelLen: false }),
        ),
      );
      const engine = new VllmInferenceEngine(
        {
          name: 'gen',
          replicas: fakes.map((f) => f.url),
          model: 'base-model',
          healthCheckIntervalMs: 0,
          retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
          resolveLoraPath: adapterPathResolver({ root }),
        },
        { timers: fakeTimers().timers, adapterInstance: 'w1' },
      );
      open.push(engine, ...fakes);
      const step1 = await skyrlSamplerArchive(root, 'm1', 'step-1', 8);
      const step2 = await skyrlSamplerArchive(root, 'm1', 'step-2', 8);

      await engine.loadWeights({ name: 'policy', path: 'tinker://m1/step-1' });
      const sample = (maxTokens: number) =>
        engine.sample({
          prompt: [1, 2, 3, 4],
          n: 2,
          maxTokens,
          temperature: 1,
          topP: 1,
          model: 'policy',
        });
      expect(await sample(4)).toHaveLength(2);
      await engine.loadWeights({ name: 'policy', path: 'tinker://m1/step-2' });
      // Window unknown up front: the server's overflow 400 (its own wording) teaches it.
      const clamped = await sample(100);
      expect(clamped.map((s) => s.tokens.length)).toEqual([12, 12]);

      const used = fakes.flatMap((f) => f.completedModels);
      expect(used).toEqual(['policy@w1.1', 'policy@w1.2']);
      for (const fake of fakes) {
        expect([...fake.adapters]).toEqual([['policy@w1.2', step2]]);
        expect(fake.requestsTo('/v1/load_lora_adapter').map((q) => q.body)).toEqual([
          { lora_name: 'policy@w1.1', lora_path: step1 },
          { lora_name: 'policy@w1.2', lora_path: step2 },
        ]);
      }
      await engine.releaseWeights('policy');
      for (const fake of fakes) expect(fake.adapters.size).toBe(0);
    });
  });
}
