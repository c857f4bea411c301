import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { withTempDir } from '../../test/embedded/fixtures.ts';

const run = promisify(execFile);

describe('engine worker threads outside vitest', () => {
  it('start under plain `node --import tsx` (worker-shim.mjs registers tsx)', async () => {
    const script = fileURLToPath(new URL('./testdata/node-smoke.ts', import.meta.url));
    await withTempDir(async (dir) => {
      const { stdout } = await run(
        process.execPath,
        ['--conditions=@anneal/source', '--import', 'tsx', script, dir],
        {
          cwd: fileURLToPath(new URL('../..', import.meta.url)),
          timeout: 60_000,
        },
      );
      const result = JSON.parse(stdout.trim()) as { loss: number; sampled: number };
      expect(result.loss).toBeGreaterThan(0);
      expect(result.sampled).toBe(3);
    });
  });
});
