// Checkpoint catalogue and retention through the real runtime, executors and embedded engines
// (the trainer over its Tinker HTTP subset): every checkpoint is catalogued with its sampler
// export; those the policy no longer keeps are marked deleted and their directories removed
// through the trainer's delete route, the kept ones stay on disk; a fork starts from a kept
// step and a deleted step fails the fork naming /model/checkpoint/step.
import { existsSync } from 'node:fs';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { resolveTinkerPath } from '@anneal/engines';
import { engineArtifactDir, getRun, listCheckpoints } from '@anneal/store';
import { type TestEnv, eventually, testEnv } from './helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

async function ended(runId: string): Promise<string> {
  return eventually(
    async () => {
      const state = (await getRun(env.store, runId))?.state;
      return state === 'succeeded' || state === 'failed' ? state : null;
    },
    120_000,
    `run ${runId} ended`,
  );
}

it('keeps what the policy keeps, deletes the rest on the trainer, and forks from a kept step', async () => {
  await env.startWorker({}, { executors: undefined, factories: {} });
  const source = await env.submit(
    [
      'kind: sft',
      'steps: 6',
      'batchSize: 2',
      'checkpointInterval: 1',
      'checkpointRetention: {keepLast: 2, keepEvery: 3}',
    ].join('\n'),
  );
  expect(await ended(source)).toBe('succeeded');
  const run = await getRun(env.store, source);
  const trainer = (run?.spec as { endpoints: { trainer: string } }).endpoints.trainer;
  const local = (uri: string) =>
    resolveTinkerPath(engineArtifactDir(env.artifactDir, trainer), uri);

  const { checkpoints: catalogue } = await listCheckpoints(env.store, source, {
    status: 'all',
    order: 'asc',
    limit: 100,
  });
  expect(catalogue.map((c) => [c.step, c.status])).toEqual([
    [1, 'deleted'],
    [2, 'deleted'],
    [3, 'kept'],
    [4, 'deleted'],
    [5, 'kept'],
    [6, 'kept'],
  ]);
  expect(catalogue.at(-1)?.latest).toBe(true);
  for (const c of catalogue) {
    expect(c.metrics?.['loss']).toEqual(expect.any(Number));
    expect(c.samplerPath).toMatch(/^tinker:\/\//);
    const onDisk = c.status === 'kept';
    expect(existsSync(local(c.path)), `step ${c.step} weights`).toBe(onDisk);
    expect(existsSync(local(c.samplerPath!)), `step ${c.step} sampler export`).toBe(onDisk);
  }

  const fork = await env.submit(
    `kind: sft\nsteps: 1\nbatchSize: 2\nmodel: {checkpoint: {run: ${source}, step: 3}}`,
  );
  expect(await ended(fork)).toBe('succeeded');
  const gone = await env.submit(
    `kind: sft\nsteps: 1\nbatchSize: 2\nmodel: {checkpoint: {run: ${source}, step: 2}}`,
  );
  expect(await ended(gone)).toBe('failed');
  expect((await getRun(env.store, gone))?.error).toContain('/model/checkpoint/step');
}, 240_000);
