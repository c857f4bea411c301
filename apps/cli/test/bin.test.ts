// apps/cli/bin/anneal.js picks what to run: the bundle when it is at least as new as every source
// it was built from, or when there are no sources (an installed copy, the images); otherwise
// the sources through tsx, or an error under ANNEAL_REQUIRE_BUILD=1. Checked on a copy of the
// bin in a scratch tree whose "bundle" only says that it ran.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { repoRoot } from './cli-process.ts';

const run = promisify(execFile);
let tree: string;

const at = (...parts: string[]) => path.join(tree, ...parts);
const ago = (seconds: number) => new Date(Date.now() - seconds * 1000);

beforeEach(() => {
  tree = mkdtempSync(path.join(tmpdir(), 'anneal-bin-'));
  for (const dir of ['apps/cli/bin', 'apps/cli/src', 'apps/cli/dist/bundle', 'packages/rl/src']) {
    mkdirSync(at(dir), { recursive: true });
  }
  copyFileSync(path.join(repoRoot, 'apps/cli/bin/anneal.js'), at('apps/cli/bin/anneal.js'));
  writeFileSync(at('apps/cli/src/main.ts'), '');
  writeFileSync(at('packages/rl/src/index.ts'), '');
  writeFileSync(
    at('apps/cli/dist/bundle/sources.json'),
    JSON.stringify(['apps/cli/src/main.ts', 'packages/rl/src/index.ts']),
  );
  writeFileSync(at('apps/cli/dist/bundle/anneal.js'), "console.log('bundle ran');");
  for (const file of ['apps/cli/src/main.ts', 'packages/rl/src/index.ts']) {
    utimesSync(at(file), ago(60), ago(60));
  }
});
afterEach(() => rmSync(tree, { recursive: true, force: true }));

async function bin(): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, ANNEAL_REQUIRE_BUILD: '1' };
  return run(process.execPath, [at('apps/cli/bin/anneal.js')], { env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

describe('the anneal bin', () => {
  it('runs the bundle when it is newer than every source it was built from', async () => {
    expect((await bin()).stdout).toBe('bundle ran\n');
  });

  it('refuses a bundle older than one of its sources (ANNEAL_REQUIRE_BUILD=1)', async () => {
    utimesSync(at('packages/rl/src/index.ts'), new Date(), new Date(Date.now() + 5_000));
    const result = await bin();
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('dist/ is older than packages/rl/src/index.ts');
    expect(result.stdout).toBe('');
  });

  it('refuses a bundle built from a source that is gone', async () => {
    rmSync(at('packages/rl/src/index.ts'));
    expect((await bin()).stderr).toContain('built from packages/rl/src/index.ts, which is gone');
  });

  it('refuses a missing bundle', async () => {
    rmSync(at('apps/cli/dist/bundle/anneal.js'));
    expect((await bin()).stderr).toContain('dist/ is not built');
  });

  it('runs the bundle of an installed copy, which has no sources', async () => {
    rmSync(at('apps/cli/src'), { recursive: true });
    rmSync(at('packages'), { recursive: true });
    expect((await bin()).stdout).toBe('bundle ran\n');
  });
});
