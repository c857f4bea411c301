// The CLI bundle (scripts/bundle-cli.mjs) must start the engines' worker threads: RpcWorker
// loads worker-shim.mjs and <name>.worker.js beside the chunk that creates them, which holds only
// because the bundle is flat and every *.worker.ts is an entry. This bundles the engines' smoke
// script the way the CLI is bundled and runs it under plain node: a trainer forward/backward
// and three sampled tokens, each in a worker thread, with no tsx anywhere.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from './cli-process.ts';

const run = promisify(execFile);
// Inside the repository, so the packages the bundle leaves external resolve from node_modules.
const cache = path.join(repoRoot, 'node_modules', '.cache');
mkdirSync(cache, { recursive: true });
const scratch = mkdtempSync(path.join(cache, 'anneal-bundle-test-'));
const outdir = path.join(scratch, 'bundle');
const artifacts = mkdirSync(path.join(scratch, 'artifacts'), { recursive: true })!;
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the CLI bundle', () => {
  it('starts engine worker threads from its flat output (no TypeScript, no tsx)', async () => {
    await run(
      process.execPath,
      [
        'scripts/bundle-cli.mjs',
        '--entry',
        'packages/engines/src/embedded/testdata/node-smoke.ts',
        '--outdir',
        outdir,
      ],
      { cwd: repoRoot, timeout: 120_000 },
    );
    const files = readdirSync(outdir);
    expect(files).toEqual(
      expect.arrayContaining([
        'anneal.js',
        'worker-shim.mjs',
        'train.worker.js',
        'sampler.worker.js',
      ]),
    );
    expect(files.filter((f) => f.endsWith('.ts'))).toEqual([]);
    const { stdout } = await run(process.execPath, [path.join(outdir, 'anneal.js'), artifacts], {
      cwd: repoRoot,
      timeout: 120_000,
      // No loader of any kind: the bundle must be plain JavaScript.
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const result = JSON.parse(stdout.trim()) as { loss: number; sampled: number };
    expect(result.loss).toBeGreaterThan(0);
    expect(result.sampled).toBe(3);
  });
});
