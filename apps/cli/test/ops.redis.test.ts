// `anneal pools ls`, `anneal workers ls|drain`, `anneal runs watch` as real processes against a
// real control plane (also a child process) and Redis. Workers and run progress are driven
// through @anneal/store exactly as a worker would (heartbeat, startRun, appendStep, finishRun),
// so every step and the control-plane restart happen at a known moment.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  type StoreContext,
  appendStep,
  createStoreContext,
  finishRun,
  heartbeatWorker,
  retireCheckpoint,
  setCheckpoint,
  startRun,
} from '@anneal/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, type Server, anneal, repoRoot, startServer } from './cli-process.ts';

const prefix = `{anneal-cli-ops-${randomUUID()}}`;
const token = `cli-ops-token-${randomUUID()}`;
const dir = mkdtempSync(join(tmpdir(), 'anneal-cli-ops-'));
const serverEnv = {
  ANNEAL_KEY_PREFIX: prefix,
  ANNEAL_TOKEN: token,
  ANNEAL_LOG_LEVEL: 'warn',
  REDIS_URL,
};
let server: Server;
let port: string;
let clientEnv: Record<string, string>;
let redis: Redis;
let store: StoreContext;

async function startPlane(portArg: string): Promise<void> {
  const started = await startServer(
    ['control-plane', '--port', portArg],
    serverEnv,
    /listening on (http:\/\/\S+:(\d+))/,
    60_000,
  );
  server = started.server;
  port = started.match[2] ?? '';
  clientEnv = { ANNEAL_URL: started.match[1] ?? '', ANNEAL_TOKEN: token };
}

async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Live {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

function spawnCli(args: string[]): Live {
  const child = spawn(process.execPath, ['apps/cli/bin/anneal.js', ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...clientEnv },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function submit(spec: string): Promise<string> {
  const file = join(dir, `${randomUUID()}.yaml`);
  writeFileSync(file, spec);
  const result = await anneal(['submit', file], clientEnv);
  expect(result.stderr).toBe('');
  return result.stdout.trim();
}

const beat = (id: string, busy = 0, runs: string[] = []) =>
  heartbeatWorker(
    store,
    {
      id,
      pool: 'default',
      slots: 2,
      busy,
      runs,
      startedAt: new Date(Date.now() - 90_000).toISOString(),
      version: '9.9.9',
    },
    3600, // the record outlives the slow CLI invocations of a loaded machine
  );

/** Data rows of the step table (right-aligned numbers after the header `STEP …`). */
const stepRows = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => /^\s+\d+\s/.test(line))
    .map((line) => Number(line.trim().split(/\s+/)[0]));

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  store = createStoreContext(redis, prefix);
  await startPlane('0');
}, 90_000);

afterAll(async () => {
  await server?.stop();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  rmSync(dir, { recursive: true, force: true });
});

describe('anneal pools ls / workers ls / workers drain', () => {
  it('shows workers, slots and queue depth, and drains a worker', async () => {
    // A worker lists only the caller's tenant's runs: the held run is a real run of this tenant.
    const held = await submit('kind: sft\nsteps: 1\n');
    await beat('w-alpha', 1, [held]);
    await beat('w-beta');
    const queued = await submit('kind: grpo\nsteps: 3\n');

    const pools = await anneal(['pools', 'ls'], clientEnv);
    expect(pools.code).toBe(0);
    const [header, row] = pools.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^POOL\s+ONLINE\s+BUSY\s+DRAINING\s+SLOTS\s+WAITING\s+PRIORITIZED/);
    expect(header).toMatch(/ACTIVE\s+FAILED\s+OLDEST WAIT$/);
    // default pool: 2 online, 1 busy, 0 draining, 1 of 4 slots busy, two runs queued
    expect(row).toMatch(/^default\s+2\s+1\s+0\s+1\/4\s+\d+\s+\d+\s+0\s+0\s+0\s+\d+s$/);
    const json = JSON.parse((await anneal(['pools', 'ls', '--json'], clientEnv)).stdout) as {
      pools: Array<{ name: string; queue: Record<string, number> }>;
    };
    const pool = json.pools.find((p) => p.name === 'default');
    expect((pool?.queue.waiting ?? 0) + (pool?.queue.prioritized ?? 0)).toBe(2);

    const workers = await anneal(['workers', 'ls'], clientEnv);
    expect(workers.stdout.split('\n')[0]).toMatch(/^ID\s+POOL\s+STATUS\s+SLOTS\s+RUNS\s+HEARTBEAT/);
    const alpha = workers.stdout.match(
      new RegExp(
        `w-alpha\\s+default\\s+online\\s+1/2\\s+${held}\\s+\\d+s ago\\s+(\\d+)m(\\d\\d)s\\s+9\\.9\\.9`,
      ),
    );
    expect(alpha, workers.stdout).not.toBeNull();
    // Uptime: started 90 s before the heartbeat, and CLI calls on a loaded machine take a while.
    expect(Number(alpha?.[1]) * 60 + Number(alpha?.[2])).toBeGreaterThanOrEqual(90);
    expect(workers.stdout).toMatch(/w-beta\s+default\s+online\s+0\/2\s+-\s/);

    const drained = await anneal(
      ['workers', 'drain', 'w-alpha', '--checkpoint-and-release'],
      clientEnv,
    );
    expect(drained).toMatchObject({ code: 0, stderr: '' });
    expect(drained.stdout).toBe(
      `draining w-alpha (${held}; its runs checkpoint and return to the queue)\n`,
    );
    const after = await anneal(['workers', 'ls', '--json'], clientEnv);
    const records = (JSON.parse(after.stdout) as { workers: Array<Record<string, unknown>> })
      .workers;
    expect(records.find((w) => w.id === 'w-alpha')).toMatchObject({
      draining: true,
      checkpointAndRelease: true,
    });
    expect((await anneal(['workers', 'ls'], clientEnv)).stdout).toMatch(
      /w-alpha\s+default\s+draining \(release\)/,
    );
    expect((await anneal(['pools', 'ls'], clientEnv)).stdout).toMatch(/^default\s+2\s+1\s+1\s/m);

    await anneal(['runs', 'cancel', queued], clientEnv);
    await anneal(['runs', 'cancel', held], clientEnv);
  }, 180_000);

  it('prints problem+json errors as `error: CODE: detail` (exit 1) and usage errors exit 2', async () => {
    const missing = await anneal(['workers', 'drain', 'w-nobody'], clientEnv);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: ANNEAL_ERR_WORKER_NOT_FOUND: .*w-nobody/);
    const unauthenticated = await anneal(['pools', 'ls'], { ...clientEnv, ANNEAL_TOKEN: 'nope' });
    expect(unauthenticated.code).toBe(1);
    expect(unauthenticated.stderr).toMatch(/^error: ANNEAL_ERR_UNAUTHENTICATED: /);
    expect((await anneal(['workers', 'drain'], clientEnv)).code).toBe(2);
    expect((await anneal(['workers', 'drain', ''], clientEnv)).code).toBe(2);
    const unreachable = await anneal(['workers', 'ls'], {
      ...clientEnv,
      ANNEAL_URL: 'http://127.0.0.1:9',
    });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(
      /^error: cannot reach the control plane at http:\/\/127\.0\.0\.1:9/,
    );
  }, 180_000);
});

describe('anneal runs watch', () => {
  it('follows a run across a control-plane restart, printing every step exactly once', async () => {
    const runId = await submit('kind: sft\nsteps: 5\n');
    await beat('w-watch', 1, [runId]);
    expect(await startRun(store, runId, 'w-watch')).toMatchObject({ status: 'started' });

    const watch = spawnCli(['runs', 'watch', runId]);
    await until('the running state', () => watch.stdout().includes('state: queued -> running'));
    for (const step of [1, 2]) {
      await appendStep(store, runId, step, {
        loss: 3 - step / 10,
        grad_norm: 0.5,
        step_seconds: 1,
      });
    }
    await until('steps 1-2', () => stepRows(watch.stdout()).length === 2);

    // Restart the control plane on the same port; steps 3-4 and a checkpoint land while it is down.
    expect(await server.stop()).toBe(0);
    await until('the drop notice', () => watch.stderr().includes('event stream dropped'));
    for (const step of [3, 4]) {
      await appendStep(store, runId, step, {
        loss: 3 - step / 10,
        grad_norm: 0.5,
        step_seconds: 1,
      });
    }
    await setCheckpoint(store, runId, { step: 4, path: '/ckpt/4' });
    await startPlane(port);
    await until('the reconnect', () => watch.stderr().includes('reconnected'), 60_000);
    await appendStep(store, runId, 5, { loss: 2.5, grad_norm: 0.5, step_seconds: 1 });
    await finishRun(store, runId, { state: 'succeeded', reason: 'all steps done' }, 'w-watch');

    expect(await watch.exited).toBe(0);
    const out = watch.stdout();
    expect(stepRows(out)).toEqual([1, 2, 3, 4, 5]);
    expect(out).toMatch(/^\s+STEP\s+loss\s+grad_norm\s+step_seconds$/m);
    expect(out).toMatch(/^\s+3\s+2\.7\s+0\.5\s+1$/m);
    expect(out.match(/checkpoint: step 4 saved to \/ckpt\/4/g)).toHaveLength(1);
    const [end, usage] = out.trimEnd().split('\n').slice(-2);
    expect(end).toBe(`run ${runId} succeeded (all steps done)`);
    // Steps written straight to the store carry no usage keys; local mode has no prices.
    expect(usage).toBe(
      'usage: 0 prompt · 0 completion · 0 trained tokens · 0 tool calls · 0s slot = $0.00',
    );
    expect(out).not.toContain('\x1b'); // not a terminal: plain lines
  }, 240_000);

  it('exits 1 for a cancelled run, streams JSON lines, and reports an unknown run', async () => {
    const runId = await submit('kind: grpo\nsteps: 2\n');
    await anneal(['runs', 'cancel', runId, '--reason', 'not needed'], clientEnv);
    const plain = await anneal(['runs', 'watch', runId], clientEnv);
    expect(plain.code).toBe(1);
    // the cancel is attributed to the caller's principal, apart from the reason it wrote
    expect(plain.stdout.trimEnd().split('\n').at(-2)).toBe(
      `run ${runId} cancelled by local-operator (not needed)`,
    );
    expect(plain.stdout.trimEnd().split('\n').at(-1)).toMatch(/^usage: 0 prompt · /);

    const json = await anneal(['runs', 'watch', runId, '--json'], clientEnv);
    expect(json.code).toBe(1);
    const events = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events.map((e) => [e.type, e.to])).toEqual([
      ['run:state', 'queued'],
      ['run:state', 'cancelled'],
    ]);
    expect(events[1].id).toMatch(/^\d+-\d+$/);

    const unknown = await anneal(['runs', 'watch', 'run_00000000000000000000000000'], clientEnv);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: ANNEAL_ERR_RUN_NOT_FOUND: /);
  }, 180_000);
});

describe('anneal runs checkpoints', () => {
  it('reads the catalogue a page at a time over HTTP and prints every entry once', async () => {
    const runId = await submit('kind: sft\nsteps: 130\n');
    await beat('w-ckpt', 1, [runId]);
    const started = await startRun(store, runId, 'w-ckpt');
    if (started.status !== 'started') throw new Error(started.status);
    const fence = { attempt: started.attempt };
    for (let step = 1; step <= 130; step++) {
      await appendStep(store, runId, step, { loss: 1 / step }, fence);
      await setCheckpoint(store, runId, { step, path: `/ckpt/${step}` }, fence);
    }
    for (let step = 1; step <= 30; step++) {
      expect((await retireCheckpoint(store, runId, step, fence)).status).toBe('retired');
    }
    const rows = (stdout: string) =>
      stdout
        .split('\n')
        .filter((line) => /^\d+\s+(kept|deleted)(\s|$)/.test(line))
        .map((line) => Number(line.split(/\s+/)[0]));
    const range = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => from + i);

    // 100 kept ones, 40 a request: three pages, each written as it arrives, one header.
    const kept = await anneal(['runs', 'checkpoints', runId, '--page', '40'], clientEnv);
    expect(kept.stderr).toBe('');
    expect(rows(kept.stdout)).toEqual(range(31, 130));
    expect(kept.stdout.match(/^STEP\s/gm)).toHaveLength(1);
    expect(kept.stdout).toContain(
      '100 kept, 30 deleted (steps 1–30; --status deleted); resume point: 130',
    );
    const deleted = await anneal(
      ['runs', 'checkpoints', runId, '--status', 'deleted', '--from', '10', '--to', '12'],
      clientEnv,
    );
    expect(rows(deleted.stdout)).toEqual([10, 11, 12]);
    const json = await anneal(
      ['runs', 'checkpoints', runId, '--status', 'all', '--page', '50', '--json'],
      clientEnv,
    );
    const body = JSON.parse(json.stdout) as {
      checkpoints: Array<{ step: number; status: string }>;
      summary: { kept: number };
    };
    expect(body.checkpoints.map((c) => c.step)).toEqual(range(1, 130));
    expect(body.checkpoints.filter((c) => c.status === 'deleted')).toHaveLength(30);
    expect(body.summary.kept).toBe(100);
    const bad = await anneal(['runs', 'checkpoints', runId, '--status', 'gone'], clientEnv);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--status must be kept, deleted or all');
  }, 240_000);
});
