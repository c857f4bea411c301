// `anneal up` / `anneal control-plane` / `anneal worker` when they cannot start: one clean line, no stack trace,
// a non-zero exit within seconds (never a hang on retrying Redis clients).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_URL, anneal } from './cli-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'anneal-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const UNREACHABLE =
  'anneal: cannot reach Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1 ' +
  '(set REDIS_URL, or start one: apt-get install redis-server | brew install redis | docker compose up -d redis)';

// Spawned processes compile the CLI with tsx first: seconds on a loaded machine.
describe('server commands fail fast and cleanly', { timeout: 60_000 }, () => {
  it.each([['up'], ['control-plane']])(
    '%s with an unreachable Redis: one line, exit 1',
    async (command) => {
      const started = Date.now();
      const run = await anneal([command, '--port', '0', '--redis-url', 'redis://127.0.0.1:1'], {
        ANNEAL_REDIS_TIMEOUT_MS: '5000',
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(`${UNREACHABLE}\n`);
      expect(run.stdout).toBe('');
      expect(Date.now() - started).toBeLessThan(30_000); // a hang would hit the test timeout
    },
  );

  it.each([['up'], ['control-plane']])(
    '%s with a bad operator config: the problems, no stack trace, exit 2',
    async (command) => {
      const config = join(dir, `bad-${command}.yaml`);
      writeFileSync(config, 'tenants: 7\nfrobnicate: true\n');
      const run = await anneal([
        command,
        '--port',
        '0',
        '--redis-url',
        REDIS_URL,
        '--config',
        config,
      ]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(new RegExp(`^anneal: invalid operator config ${config}:\\n`));
      expect(run.stderr).toContain('frobnicate');
      expect(run.stderr).not.toMatch(/^\s+at /m);
    },
  );

  it('a missing operator config file: one line, exit 2', async () => {
    const missing = join(dir, 'nope.yaml');
    const run = await anneal(['control-plane', '--redis-url', REDIS_URL, '--config', missing]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      new RegExp(`^anneal: invalid operator config ${missing}:\\ncannot read: ENOENT`),
    );
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });

  it('a bad environment variable: named, exit 2', async () => {
    const run = await anneal(['control-plane', '--redis-url', REDIS_URL], {
      ANNEAL_BODY_LIMIT_BYTES: 'lots',
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^anneal: invalid environment:\n.*ANNEAL_BODY_LIMIT_BYTES/);
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});

describe('anneal worker fails fast and cleanly', { timeout: 60_000 }, () => {
  it('with an unreachable Redis: one line, exit 1', async () => {
    const run = await anneal(['worker', '--redis-url', 'redis://127.0.0.1:1', '--pool', 'p']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`${UNREACHABLE}\n`);
  });
});
