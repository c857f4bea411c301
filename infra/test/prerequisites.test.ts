// `npm test` on a machine missing what the suite needs (scripts/prerequisites.mjs): one message
// lists every missing program with how to get it, before anything is installed, built or run.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/paths.ts';

// A PATH holding nothing but node: no redis-server, prometheus, promtool, rsvg-convert or chromium.
const bare = mkdtempSync(path.join(tmpdir(), 'anneal-prereq-'));
symlinkSync(process.execPath, path.join(bare, 'node'));
afterAll(() => rmSync(bare, { recursive: true, force: true }));

function runTask(task: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stderr: string; ms: number }>((done, fail) => {
    const started = Date.now();
    // The filter matches no workspace: should the check let the task through, turbo stops at once.
    const child = spawn(
      process.execPath,
      ['scripts/run.mjs', task, '--filter=@anneal/no-such-workspace'],
      { cwd: REPO_ROOT, env: { HOME: process.env['HOME'] ?? bare, PATH: bare, ...env } },
    );
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stderr, ms: Date.now() - started }));
  });
}

describe('npm test prerequisites', () => {
  it('lists Redis, prometheus, promtool, rsvg-convert and chromium in one message, with how to get each, and runs nothing', async () => {
    const run = await runTask('test', { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code).toBe(1);
    expect(run.stderr.match(/needs 5 more things/g)).toHaveLength(1);
    expect(run.stderr).toMatch(
      /chromium \(chromium on PATH does not run\)\n\s+get it: apt-get install -y chromium/,
    );
    expect(run.stderr).toMatch(
      /rsvg-convert \(rsvg-convert on PATH does not run\)\n\s+get it: apt-get install -y librsvg2-bin/,
    );
    expect(run.stderr).toContain('Redis at REDIS_URL=redis://127.0.0.1:1 (not reachable)');
    expect(run.stderr).toMatch(
      /prometheus \(prometheus on PATH does not run\)\n\s+get it: apt-get/,
    );
    expect(run.stderr).toMatch(/promtool \(promtool on PATH does not run\)\n\s+get it: ships with/);
    expect(run.stderr).toMatch(/Nothing was installed, built or run: no (apt-get|brew) on PATH/);
    expect(run.stderr).not.toMatch(/installing dependencies|build:|turbo/i);
    expect(run.ms).toBeLessThan(15_000);
  });

  it('names an override that does not run (PROMTOOL_BIN)', async () => {
    const run = await runTask('test', {
      REDIS_URL: 'redis://127.0.0.1:1',
      PROMTOOL_BIN: '/nonexistent/promtool',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('promtool (PROMTOOL_BIN=/nonexistent/promtool does not run)');
  });

  it('asks only for Redis before the demo', async () => {
    const run = await runTask('demo', { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('needs 1 more thing on this machine');
    expect(run.stderr).not.toMatch(/prometheus|promtool/);
  });
});
