// `anneal submit sweep.yaml`, `anneal sweeps ls|get|pause|resume|cancel` and
// `anneal runs compare --sweep` as real processes against a real control plane and Redis.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, type Server, anneal, startServer } from './cli-process.ts';

const prefix = `{anneal-cli-sweeps-${randomUUID()}}`;
const token = `cli-test-token-${randomUUID()}`;
const dir = mkdtempSync(join(tmpdir(), 'anneal-cli-sweeps-'));
let server: Server;
let env: Record<string, string>;

beforeAll(async () => {
  const started = await startServer(
    ['control-plane', '--port', '0'],
    { ANNEAL_KEY_PREFIX: prefix, ANNEAL_TOKEN: token, ANNEAL_LOG_LEVEL: 'warn', REDIS_URL },
    /listening on (http:\/\/\S+)/,
  );
  server = started.server;
  env = { ANNEAL_URL: started.match[1] ?? '', ANNEAL_TOKEN: token };
}, 60_000);

afterAll(async () => {
  expect(await server?.stop()).toBe(0);
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  rmSync(dir, { recursive: true, force: true });
});

describe('anneal sweeps', () => {
  it('submits a sweep of 4 runs, shows, compares, pauses, resumes and cancels it', async () => {
    const file = join(dir, 'sweep.yaml');
    writeFileSync(
      file,
      [
        'kind: sweep',
        'name: lr-len',
        'base: { kind: grpo, steps: 2 }',
        'grid:',
        '  optimizer.learningRate: [1.0e-5, 3.0e-5]',
        '  reward.lambdaLen: [0, 0.2]',
        '',
      ].join('\n'),
    );
    const submitted = await anneal(['submit', file, '--idempotency-key', 'cli-sweep'], env);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    expect(id).toMatch(/^sweep_[0-9A-Z]{26}$/);
    expect(submitted.stderr).toMatch(/sweep of 4 runs: (run_[0-9A-Z]{26} ?){4}/);
    const again = await anneal(['submit', file, '--idempotency-key', 'cli-sweep'], env);
    expect(again.stdout.trim()).toBe(id);
    expect(again.stderr).toContain(`existing sweep ${id}`);

    const listed = await anneal(['sweeps', 'ls'], env);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+lr-len\\s+grpo\\s+4\\s+4 queued`));

    const got = await anneal(['sweeps', 'get', id], env);
    expect(got.stdout).toContain(`${id} (lr-len): 4 grpo runs, 4 queued`);
    expect(got.stdout).toMatch(/RUN\s+STATE\s+STEP\s+optimizer\.learningRate\s+reward\.lambdaLen/);
    expect(got.stdout).toMatch(/queued\s+-\s+0\.00003\s+0\.2/);

    const compared = await anneal(['runs', 'compare', '--sweep', id], env);
    expect(compared.code, compared.stderr).toBe(0);
    expect(compared.stdout).toContain('4 grpo runs');
    expect(compared.stdout).toMatch(/field\s+A\s+B\s+C\s+D/);
    expect(compared.stdout).toMatch(
      /optimizer\.learningRate\s+0\.00001\s+0\.00001\s+0\.00003\s+0\.00003/,
    );
    expect(compared.stdout).toMatch(/reward\.lambdaLen\s+0\s+0\.2\s+0\s+0\.2/);
    expect(compared.stdout).toContain('(no step committed yet)');

    expect((await anneal(['sweeps', 'pause', id], env)).stdout.trim()).toBe(`${id}: 4 paused`);
    expect((await anneal(['sweeps', 'resume', id], env)).stdout.trim()).toBe(`${id}: 4 queued`);
    expect((await anneal(['sweeps', 'cancel', id], env)).stdout.trim()).toBe(`${id}: 4 cancelled`);
  });

  it('prints the grid path a sweep gets wrong and exits 1', async () => {
    const file = join(dir, 'bad-sweep.yaml');
    writeFileSync(file, 'kind: sweep\nbase: { kind: sft }\ngrid:\n  optimizer.rate: [1.0e-5]\n');
    const result = await anneal(['submit', file], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('(ANNEAL_ERR_SWEEP_INVALID)');
    expect(result.stderr).toContain(
      "/grid/optimizer.rate (line 4): no field 'rate' in 'optimizer'",
    );
  });
});
