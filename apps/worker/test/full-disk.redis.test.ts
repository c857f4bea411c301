// A full disk: the real SFT executor on the embedded trainer, whose checkpoint saves fail with
// ENOSPC from step 4 on (injected through the trainer's file operations, CheckpointFs — no
// environment switch). The run fails clearly after its bounded attempts, naming ENOSPC; its
// last good checkpoint (step 2) is intact and loads; and no failed save leaves anything behind —
// no `.tmp` file, no checkpoint directory without checkpoint.json, no directory of a model
// that each retry created only to fail saving into it.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type CheckpointFs,
  EmbeddedTrainer,
  NODE_CHECKPOINT_FS,
  loadCheckpoint,
  resolveTinkerPath,
} from '@anneal/engines';
import { getRun, getTransitions } from '@anneal/store';
import { defineWorkerConfig } from '../src/index.ts';
import { defaultEmbeddedEngines } from '../src/resources/embedded.ts';
import { embeddedTrainerDirs } from '../src/resources/resolve.ts';
import { type TestEnv, eventually, testEnv } from './helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

/** Every file under `dir`, relative to it. */
async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

/** Saves of a checkpoint named for step 4 or later fail as on a full disk (after a partial write). */
const fullFromStep4: CheckpointFs = {
  ...NODE_CHECKPOINT_FS,
  async writeFile(file, data) {
    const step = Number(/-step-(\d+)/.exec(file)?.[1] ?? 0);
    if (step >= 4 && file.endsWith('adam_m.f32.tmp')) {
      await NODE_CHECKPOINT_FS.writeFile(file, new Uint8Array(16));
      throw Object.assign(new Error(`ENOSPC: no space left on device, write '${file}'`), {
        code: 'ENOSPC',
      });
    }
    await NODE_CHECKPOINT_FS.writeFile(file, data);
  },
};

describe('a full disk', () => {
  it('fails the run naming ENOSPC, keeps the last good checkpoint and leaves no partial save', async () => {
    const config = defineWorkerConfig({
      artifactDir: env.artifactDir,
      operatorConfig: env.operatorConfig,
    });
    const trainerDirs = embeddedTrainerDirs(config);
    const embedded = defaultEmbeddedEngines({
      trainerDirs,
      createTrainer: (options) => new EmbeddedTrainer({ ...options, fs: fullFromStep4 }),
    });
    await env.startWorker({}, { executors: undefined, factories: { embedded } });
    const runId = await env.submit('kind: sft\nsteps: 6\nbatchSize: 2\ncheckpointInterval: 2');
    // JOB_CATALOGUE: 3 attempts, exponential backoff from 5 s.
    const run = await eventually(
      async () => {
        const r = await getRun(env.store, runId);
        return r?.state === 'failed' || r?.state === 'succeeded' ? r : null;
      },
      90_000,
      'run ended',
    );
    expect(run.state).toBe('failed');
    expect(run.error).toMatch(/ENOSPC/);
    const retries = (await getTransitions(env.store, runId)).filter((t) => t.to === 'retrying');
    expect(retries).toHaveLength(2); // bounded: 3 attempts
    expect(run.checkpoint?.step).toBe(2);

    const [root] = trainerDirs;
    const left = await files(root!);
    expect(left.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    // Only complete checkpoints: each directory holding a weights file has its header.
    const dirs = new Set(left.filter((f) => f.endsWith('.f32')).map((f) => path.dirname(f)));
    for (const dir of dirs) expect(left).toContain(path.join(dir, 'checkpoint.json'));
    // The first attempt's model holds step 2; the retries' models left no directory.
    const good = resolveTinkerPath(root!, run.checkpoint!.path);
    expect([...dirs]).toEqual([path.relative(root!, good)]);
    expect(await readdir(root!)).toEqual([path.relative(root!, good).split(path.sep)[0]]);
    const loaded = await loadCheckpoint(good);
    expect(loaded.adam?.step).toBe(2);
  }, 120_000);
});
