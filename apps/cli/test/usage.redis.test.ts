// Usage and budgets through the REST API (docs/usage.md): the control plane in process and a
// worker process running the real executors on the embedded engines, both reading one operator
// config file with a price table and a capped tenant. Asserts: a run killed (kill -9) and
// resumed by another worker is metered exactly once (its usage is the sum over its committed
// step records, though steps after its checkpoint ran twice; slot time per attempt); a run at
// its `budget.maxUsd` says so on its stream and pauses; a tenant at its cap has its running run
// paused and new runs refused with a problem+json; `anneal submit --dry-run` prints the
// estimate of the shared pure function.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { type RunningControlPlane, parseEnv, startControlPlane } from '@anneal/control-plane';
import {
  type RunEvent,
  type RunResource,
  type RunUsage,
  type TenantUsageList,
  STEP_USAGE_KEYS,
  estimateRun,
  parseOperatorConfig,
  parseRunSpec,
  resolveRunSpec,
} from '@anneal/protocol';
import {
  type StoreContext,
  createStoreContext,
  deleteKeysWithPrefix,
  getRun,
  keys,
  readEvents,
  readSteps,
} from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import {
  type RealWorker,
  killHard,
  spawnRealWorker,
} from '../../worker/test/reliability/real-worker.ts';
import { REDIS_URL, anneal } from './cli-process.ts';
import { formatUsd } from '../src/ops/usage.ts';

const ACME = `usage-acme-${randomUUID()}`;
const CAPPED = `usage-capped-${randomUUID()}`;
const sha = (token: string) => createHash('sha256').update(token).digest('hex');

/** Prices high enough that a few tiny SFT steps cost cents; a slot-hour of $36 is $0.01/s. */
const CONFIG = `
pools: { default: { slots: 1 } }
inference: { embedded: { type: embedded } }
trainers:
  embedded:
    type: embedded
    capabilities: { kinds: [sft, rm, grpo, eval], losses: [cross_entropy, importance_sampling, ppo, bradley_terry], reduction: sum }
search: { local: { type: local } }
baseModels: { tiny: { model: "embedded:tiny" } }
defaults: { pool: default, inference: embedded, trainer: embedded, search: local, baseModel: tiny }
prices:
  promptPerMillionTokens: 2
  completionPerMillionTokens: 8
  trainedPerMillionTokens: 1000
  perToolCall: 0.005
  perSlotHour: 36
tenants:
  acme: {}
  capped: { budget: { maxUsd: 0.05, period: day } }
tokens:
  - { name: acme, sha256: "${sha(ACME)}", role: operator, tenant: acme }
  - { name: capped, sha256: "${sha(CAPPED)}", role: submitter, tenant: capped }
`;

interface Stack {
  plane: RunningControlPlane;
  workers: RealWorker[];
  store: StoreContext;
  redis: Redis;
  prefix: string;
  dir: string;
  configPath: string;
  spawn(id: string): RealWorker;
}
let stack: Stack | undefined;

afterEach(async () => {
  if (!stack) return;
  const { plane, workers, redis, prefix, dir } = stack;
  stack = undefined;
  for (const worker of workers) await killHard(worker);
  await plane.close();
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
  await rm(dir, { recursive: true, force: true });
});

async function start(): Promise<Stack> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-usage-'));
  const configPath = path.join(dir, 'anneal.yaml');
  await writeFile(configPath, CONFIG);
  const parsed = parseOperatorConfig(CONFIG);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const prefix = `{anneal-usage-${randomUUID()}}`;
  const plane = await startControlPlane({
    env: parseEnv({
      REDIS_URL,
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_HOST: '127.0.0.1',
      ANNEAL_PORT: '0',
    }),
    operator: { operator: parsed.value },
    logger: createLogger({ name: 'control-plane', level: 'silent' }),
  });
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const workers: RealWorker[] = [];
  const spawn = (id: string) => {
    const worker = spawnRealWorker({
      id,
      heartbeatTtlSeconds: 5,
      env: {
        REDIS_URL,
        ANNEAL_KEY_PREFIX: prefix,
        ANNEAL_CONFIG: configPath,
        ANNEAL_ARTIFACT_DIR: path.join(dir, 'artifacts'),
        ANNEAL_METRICS_PORT: '0',
        ANNEAL_METRICS_HOST: '127.0.0.1',
        ANNEAL_HEARTBEAT_SECONDS: '0.5',
        ANNEAL_LOCK_DURATION_MS: '8000',
        ANNEAL_STALLED_INTERVAL_MS: '1000',
      },
    });
    workers.push(worker);
    return worker;
  };
  stack = {
    plane,
    workers,
    store: createStoreContext(redis, prefix),
    redis,
    prefix,
    dir,
    configPath,
    spawn,
  };
  return stack;
}

async function api<T>(
  s: Stack,
  method: string,
  url: string,
  options: { token?: string; body?: string } = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${s.plane.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${options.token ?? ACME}`,
      ...(options.body !== undefined && { 'content-type': 'application/yaml' }),
    },
    ...(options.body !== undefined && { body: options.body }),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function eventually<T>(
  check: () => Promise<T | false | null | undefined>,
  ms: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function submit(s: Stack, yaml: string, token?: string): Promise<string> {
  const created = await api<RunResource>(s, 'POST', '/v1/runs', {
    body: yaml,
    ...(token && { token }),
  });
  expect(created.status).toBe(201);
  return created.body.id;
}

const finished = (s: Stack, runId: string) =>
  eventually(
    async () => {
      const run = await getRun(s.store, runId);
      if (run?.state === 'failed') throw new Error(`run failed: ${run.error}`);
      return run?.state === 'succeeded' && run;
    },
    150_000,
    `run ${runId} succeeded`,
  );

/** Waits for the run to be paused; its last transition (by: budget). */
async function pausedBy(s: Stack, runId: string) {
  const run = await eventually(
    async () => {
      const found = await getRun(s.store, runId, { transitions: true });
      if (found?.state === 'succeeded' || found?.state === 'failed')
        throw new Error(`run ${runId} ended ${found.state} instead of pausing`);
      return found?.state === 'paused' && found;
    },
    120_000,
    `run ${runId} paused`,
  );
  const last = run.transitions?.at(-1);
  expect(last).toMatchObject({ to: 'paused', by: 'budget' });
  expect(run.checkpoint?.step).toBe(run.lastStep);
  return last!;
}

async function notices(s: Stack, runId: string) {
  return (await readEvents(s.store, runId, '0', 10_000))
    .map((e) => e.event as RunEvent)
    .filter((e) => e.type === 'run:notice');
}

describe('usage and budgets', () => {
  it('meters a killed-and-resumed run exactly once: its usage is the sum of its step records', async () => {
    const s = await start();
    const first = s.spawn('usage-w1');
    const runId = await submit(s, 'kind: sft\nsteps: 12\nbatchSize: 2\ncheckpointInterval: 4\n');
    // Killed between checkpoints: steps after the checkpoint are run again by the next attempt.
    const atKill = await eventually(
      async () => {
        const run = await getRun(s.store, runId);
        return (run?.lastStep ?? 0) >= 6 && (run?.lastStep ?? 0) % 4 !== 0 && run;
      },
      120_000,
      'step 6 committed',
    );
    await killHard(first);
    const checkpointAtKill = (await getRun(s.store, runId))?.checkpoint?.step ?? 0;
    s.spawn('usage-w2');
    const run = await finished(s, runId);
    // At least the kill's; a loaded machine may cost a spurious retry more (counted the same).
    expect(run.attempt).toBeGreaterThanOrEqual(2);
    expect(checkpointAtKill).toBeLessThan(atKill.lastStep ?? 0); // some steps ran twice

    const steps = await readSteps(s.store, runId);
    expect(steps.map((x) => x.step)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const trained = steps.reduce(
      (sum, x) => sum + (x.metrics[STEP_USAGE_KEYS.trainedTokens] ?? 0),
      0,
    );
    expect(trained).toBeGreaterThan(0);
    const { status, body } = await api<RunUsage>(s, 'GET', `/v1/runs/${runId}/usage`);
    expect(status).toBe(200);
    expect(body.usage.trainedTokens).toBe(trained);
    expect(body.usage.promptTokens).toBe(0); // SFT samples nothing
    expect(body.costUsd.trainedTokens).toBeCloseTo((trained * 1000) / 1e6, 9);
    // Slot time: each attempt's high-water mark, both attempts counted.
    const hash = await s.redis.hgetall(keys(s.prefix).runUsage(runId));
    const perAttempt = Array.from({ length: run.attempt }, (_, i) => Number(hash[`slot/${i + 1}`]));
    expect(perAttempt.slice(0, 2).every((x) => x > 0)).toBe(true);
    expect(body.usage.slotSeconds).toBeCloseTo(
      perAttempt.reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0),
      6,
    );
    expect(body.costUsd.slotSeconds).toBeCloseTo(body.usage.slotSeconds * 0.01, 6);
    expect(body.costUsd.total).toBeCloseTo(
      body.costUsd.trainedTokens + body.costUsd.slotSeconds,
      9,
    );
    expect(body.budget).toBeNull();

    // The operator view of the tenant's day holds this run only (a fresh key prefix).
    const day = await api<TenantUsageList>(s, 'GET', '/v1/usage?period=day&tenant=acme');
    expect(day.status).toBe(200);
    expect(day.body.tenants).toEqual([
      { tenant: 'acme', usage: body.usage, costUsd: body.costUsd, budget: null },
    ]);
    // Another tenant's run is not found; a submitter may not read the operator view.
    expect((await api(s, 'GET', `/v1/runs/${runId}/usage`, { token: CAPPED })).status).toBe(404);
    expect((await api(s, 'GET', '/v1/usage?period=day', { token: CAPPED })).status).toBe(403);
  }, 240_000);

  it('a run at budget.maxUsd pauses with an event; a tenant at its cap pauses and refuses runs', async () => {
    const s = await start();
    s.spawn('usage-budget-w');
    const budgeted = await submit(
      s,
      'kind: sft\nsteps: 6\nbatchSize: 2\ncheckpointInterval: 2\nbudget: { maxUsd: 0.01 }\n',
    );
    const [notice] = await eventually(
      async () => {
        const found = await notices(s, budgeted);
        return found.length > 0 && found;
      },
      120_000,
      'the budget notice',
    );
    expect(notice).toMatchObject({ type: 'run:notice', code: 'budget_exhausted' });
    // At a step's commit; or, when an attempt ended before its first commit with the budget
    // spent (slot time of model loading, a retry on a loaded machine), at the retry's start,
    // which no longer starts the run (docs/usage.md "No run starts at a cap").
    expect((notice as { message: string }).message).toMatch(
      /^run budget (reached at step \d+: spent|spent before the run could start:) \$\d+\.\d+ of \$0\.0100 \(budget\.maxUsd\)/,
    );
    // Paused at that step's boundary, with the notice's sentence, after a checkpoint of it.
    const paused = await pausedBy(s, budgeted);
    expect(paused.reason).toBe(`paused by budget: ${(notice as { message: string }).message}`);
    const usage = await api<RunUsage>(s, 'GET', `/v1/runs/${budgeted}/usage`);
    expect(usage.body).toMatchObject({ state: 'paused' });
    expect(usage.body.budget).toMatchObject({ maxUsd: 0.01, reached: true, remainingUsd: 0 });
    expect(usage.body.costUsd.total).toBeGreaterThanOrEqual(0.01);

    // The capped tenant's first run is accepted (nothing spent yet), spends past $0.05 and pauses.
    const spender = await submit(s, 'kind: sft\nsteps: 4\nbatchSize: 2\n', CAPPED);
    const spenderPaused = await pausedBy(s, spender);
    expect(spenderPaused.reason).toMatch(
      /^paused by budget: tenant 'capped' (reached its budget|is at its budget)/,
    );
    const refused = await fetch(`${s.plane.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CAPPED}`, 'content-type': 'application/yaml' },
      body: 'kind: sft\nsteps: 2\n',
    });
    expect(refused.status).toBe(402);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem = (await refused.json()) as { code: string; detail: string };
    expect(problem.code).toBe('ANNEAL_ERR_TENANT_BUDGET_EXHAUSTED');
    expect(problem.detail).toMatch(
      /^tenant 'capped' has spent \$\d+\.\d\d of its \$0\.05 day budget/,
    );
    const view = await api<TenantUsageList>(s, 'GET', '/v1/usage?period=month&tenant=capped');
    expect(view.body.tenants[0]?.budget).toMatchObject({
      maxUsd: 0.05,
      period: 'day',
      reached: true,
    });
  }, 240_000);

  it('`anneal submit --dry-run` prints the estimate and queues nothing', async () => {
    const s = await start();
    const yaml =
      'kind: grpo\nsteps: 20\nrollout: { groupSize: 4, promptsPerStep: 2, maxTokens: 64 }\nbudget: { maxUsd: 0.5 }\n';
    const file = path.join(s.dir, 'grpo.yaml');
    await writeFile(file, yaml);
    const result = await anneal(['submit', '--dry-run', '--prompt-tokens', '100', file], {
      ANNEAL_URL: s.plane.url,
      ANNEAL_TOKEN: ACME,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const parsed = parseRunSpec(yaml);
    if (!parsed.ok) throw new Error('spec');
    const operator = parseOperatorConfig(CONFIG);
    if (!operator.ok) throw new Error('config');
    const resolved = resolveRunSpec(parsed.value, operator.value);
    if (!resolved.ok) throw new Error('resolve');
    const expected = estimateRun(resolved.value, operator.value.prices, { promptTokens: 100 });
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      "estimate: grpo, 20 step(s); a ceiling from the spec's bounds at the operator's prices",
    );
    expect(lines[1]).toMatch(/^ {2}per step: .* = (\$\d+\.\d+)$/);
    expect(lines[1]?.endsWith(`= ${formatUsd(expected.perStep[0]!.costUsd.total)}`)).toBe(true);
    expect(lines[2]?.endsWith(`= ${formatUsd(expected.total.costUsd.total)}`)).toBe(true);
    expect(lines).toContain(
      expected.budget?.fits
        ? '  budget.maxUsd $0.5000: the ceiling fits'
        : '  budget.maxUsd $0.5000: the ceiling is over it; the run pauses when it reaches it',
    );
    expect(lines).toContain(
      '  not estimated: slot time: a step’s duration depends on the hardware',
    );
    const listed = await api<{ runs: unknown[] }>(s, 'GET', '/v1/runs');
    expect(listed.body.runs).toEqual([]);
  }, 60_000);
});
