// `anneal control-plane`, `anneal submit`, `anneal runs ls|get|cancel` as real processes.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, type Server, anneal, startServer } from './cli-process.ts';

const prefix = `{anneal-cli-test-${randomUUID()}}`;
const token = `cli-test-token-${randomUUID()}`;
const dir = mkdtempSync(join(tmpdir(), 'anneal-cli-runs-'));
let server: Server;
let clientEnv: Record<string, string>;

beforeAll(async () => {
  const started = await startServer(
    ['control-plane', '--port', '0'],
    { ANNEAL_KEY_PREFIX: prefix, ANNEAL_TOKEN: token, ANNEAL_LOG_LEVEL: 'warn', REDIS_URL },
    /listening on (http:\/\/\S+)/,
  );
  server = started.server;
  clientEnv = { ANNEAL_URL: started.match[1] ?? '', ANNEAL_TOKEN: token };
}, 60_000);

afterAll(async () => {
  const code = await server?.stop();
  expect(code).toBe(0);
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  rmSync(dir, { recursive: true, force: true });
});

describe('anneal submit / runs', () => {
  it('submits a YAML spec, lists, gets and cancels the run', async () => {
    const file = join(dir, 'run.yaml');
    writeFileSync(file, 'kind: grpo\nsteps: 3\nlabels: {exp: cli}\n');
    const submitted = await anneal(['submit', file], clientEnv);
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    expect(id).toMatch(/^run_[0-9A-Z]{26}$/);

    const listed = await anneal(['runs', 'ls', '--label', 'exp=cli'], clientEnv);
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID\s+KIND\s+STATE/);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+grpo\\s+queued\\s+default\\s+50`));

    const cancelled = await anneal(['runs', 'cancel', id, '--reason', 'cli test'], clientEnv);
    expect(cancelled.stdout.trim()).toBe(`cancelled ${id}`);

    const got = await anneal(['runs', 'get', id], clientEnv);
    const run = JSON.parse(got.stdout);
    expect(run).toMatchObject({ id, state: 'cancelled', tenant: 'default' });
    expect(run.transitions.at(-1)).toMatchObject({ to: 'cancelled', reason: 'cli test' });
    // Never started: nothing metered (local mode has no prices).
    expect(got.stderr).toBe(
      'usage: 0 prompt · 0 completion · 0 trained tokens · 0 tool calls · 0s slot = $0.00\n',
    );
  });

  it('prints validation errors with JSON pointers and exits 1', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, '{"kind": "grpo", "rollout": {"groupSize": 1, "size": 3}}');
    const result = await anneal(['submit', file], clientEnv);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: Run spec is invalid (ANNEAL_ERR_RUN_SPEC_INVALID)');
    expect(result.stderr).toContain('/rollout/size (line 1): unknown field');
    const anonymous = await anneal(['runs', 'ls'], {
      ANNEAL_URL: clientEnv.ANNEAL_URL ?? '',
      ANNEAL_TOKEN: '',
    });
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toContain('ANNEAL_ERR_UNAUTHENTICATED');
  });
});
