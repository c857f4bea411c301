// Rollout ledger read bench: GET /v1/runs/{id}/rollouts on a GRPO run whose ledger holds STEPS
// steps × GROUPS groups × (G policy + G reference) rollouts, next to the same requests on a run
// with one step (the baseline, same process, same files code). A page is sorted and filtered from
// the steps' indexes and inflates only the groups it shows, so a sorted page over the whole run
// should cost a small multiple of a one-step run's, not STEPS times it; a text search reads at
// most MAX_SCANNED records. Cold = first request (indexes parsed), warm = repeated.
// Run: `npm run bench:rollouts -w bench` (BENCH_ROLLOUT_STEPS, default 100).
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { buildApp, sha256Hex } from '@anneal/control-plane';
import { type RolloutRecord, rolloutId, validateOperatorConfig } from '@anneal/protocol';
import {
  appendStep,
  commitLedgerStep,
  createStoreContext,
  deleteKeysWithPrefix,
  runArtifactDir,
  startRun,
  writeLedgerStep,
} from '@anneal/store';

const STEPS = Number(process.env.BENCH_ROLLOUT_STEPS ?? 100);
const GROUPS = 32;
const G = 8;
const REPEATS = 15;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `{anneal-bench-rollouts-${randomUUID()}}`;
const token = `bench-${randomUUID()}`;

const operator = validateOperatorConfig({
  pools: { default: { slots: 1 } },
  inference: { embedded: { type: 'embedded' } },
  trainers: {
    embedded: {
      type: 'embedded',
      capabilities: { kinds: ['grpo'], losses: ['importance_sampling'] },
    },
  },
  search: { local: { type: 'local' } },
  baseModels: { tiny: { model: 'embedded:tiny' } },
  defaults: {
    pool: 'default',
    inference: 'embedded',
    trainer: 'embedded',
    search: 'local',
    baseModel: 'tiny',
  },
  tenants: { bench: {} },
  tokens: [
    {
      name: 'bench',
      sha256: sha256Hex(token),
      role: 'submitter',
      tenant: 'bench',
      rateLimit: { max: 1_000_000, windowSeconds: 60 },
    },
  ],
});
if (!operator.ok) throw new Error(JSON.stringify(operator.errors));

/** A rollout of about 1.5 KB of JSON: a prompt, two turns, a search call, an answer. */
function record(step: number, group: number, index: number, policy: boolean): RolloutRecord {
  const k = (step * 7919 + group * 104_729 + index * 31) % 1000;
  const role = policy ? 'policy' : 'reference';
  const text = (n: number) => `token${k} `.repeat(n);
  return {
    id: rolloutId(role, step, group, index),
    role,
    step,
    group,
    index,
    pairedWith: rolloutId(policy ? 'reference' : 'policy', step, group, index),
    policyVersion: policy ? step - 1 : null,
    promptId: `prompt-${(step * GROUPS + group) % 500}`,
    source: 'search-qa',
    exampleId: `q${group}`,
    component: 'qa',
    prompt: { text: `Question ${group}: ${text(20)}` },
    turns: [
      {
        assistant: text(30),
        calls: [
          {
            name: 'search_web',
            arguments: { query: `query ${k}` },
            status: 'ok',
            failed: false,
            resultCount: 3,
            result: text(25),
            resultChars: 800,
          },
        ],
      },
      { assistant: text(15), calls: [] },
    ],
    answer: `answer ${k}`,
    finish: 'answer',
    truncated: false,
    lengths: { prompt: 40, generated: 60 + (k % 40), response: 200, total: 240 },
    toolCalls: 1,
    toolErrors: 0,
    rewards: policy
      ? {
          baseReward: k % 2,
          preferenceScore: 0.5,
          toolPenalty: 0.01,
          lengthPenalty: 0.02,
          efficiencyPenalty: 0.03,
          reward: (k % 2) * 0.5 - 0.03 + k / 10_000,
        }
      : null,
    advantage: policy ? (k - 500) / 500 : null,
    ratio: policy
      ? { mean: 1 + (k - 500) / 100_000, min: 0.9, max: 1.1, k3: 1e-4, generated: 60 }
      : null,
    checks: null,
  };
}

async function seed(
  store: ReturnType<typeof createStoreContext>,
  root: string,
  runId: string,
  steps: number,
) {
  await startRun(store, runId, 'bench-worker');
  const runDir = runArtifactDir(root, runId);
  for (let step = 1; step <= steps; step++) {
    const groups = Array.from({ length: GROUPS }, (_, g) => [
      ...Array.from({ length: G }, (_, i) => record(step, g, i, true)),
      ...Array.from({ length: G }, (_, i) => record(step, g, i, false)),
    ]);
    await writeLedgerStep(runDir, {
      step,
      attempt: 1,
      policyVersion: step - 1,
      groupSize: G,
      hasTokens: false,
      sample: [0, 1, 2, 3],
      groups,
    });
    await appendStep(store, runId, step, { loss: 0 }, { attempt: 1 });
    await commitLedgerStep(runDir, step, { attempt: 1, rollbacks: 0 });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const redis = new Redis(redisUrl, { maxRetriesPerRequest: null, enableAutoPipelining: true });
const blocking: Redis[] = [];
const artifactDir = await mkdtemp(path.join(tmpdir(), 'anneal-bench-rollouts-'));
const app = await buildApp({
  operator: operator.value,
  redis,
  prefix,
  artifactDir,
  defaultMetrics: false,
  createBlockingClient: () => {
    const client = new Redis(redisUrl, { maxRetriesPerRequest: null });
    blocking.push(client);
    return client;
  },
});
try {
  const store = createStoreContext(redis, prefix);
  const submit = async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/yaml' },
      payload: 'kind: grpo\n',
    });
    if (res.statusCode !== 201) throw new Error(`submit: ${res.body}`);
    return res.json<{ id: string }>().id;
  };
  const big = await submit();
  const small = await submit();
  const seeded = performance.now();
  await seed(store, artifactDir, big, STEPS);
  await seed(store, artifactDir, small, 1);
  const seedMs = performance.now() - seeded;

  async function time(url: string): Promise<{ cold: number; warm: number; count: number }> {
    const one = async () => {
      const started = performance.now();
      const res = await app.inject({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${token}` },
      });
      if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
      const body = res.json<{ rollouts?: unknown[] }>();
      return { ms: performance.now() - started, count: body.rollouts?.length ?? 1 };
    };
    const cold = await one();
    const warm: number[] = [];
    for (let i = 0; i < REPEATS; i++) warm.push((await one()).ms);
    return { cold: cold.ms, warm: median(warm), count: cold.count };
  }

  const cases: Array<[string, (run: string) => string]> = [
    [
      'page of 50 sorted by reward (whole run)',
      (r) => `/v1/runs/${r}/rollouts?sort=reward&order=desc&limit=50`,
    ],
    ['page of 50 of step 1', (r) => `/v1/runs/${r}/rollouts?step=1&limit=50`],
    ['one prompt across steps', (r) => `/v1/runs/${r}/rollouts?prompt=prompt-7&limit=50`],
    [
      'grep with no match (scan budget)',
      (r) => `/v1/runs/${r}/rollouts?grep=no-such-text&limit=50`,
    ],
    ['one rollout by id', (r) => `/v1/runs/${r}/rollouts/1-0-0`],
  ];
  console.log(
    `rollout ledger read bench: ${STEPS} steps × ${GROUPS} groups × ${2 * G} rollouts (${STEPS * GROUPS * 2 * G} records) vs 1 step; seeded in ${(seedMs / 1000).toFixed(1)} s; load ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log('case | baseline warm ms | run warm ms | ratio | run cold ms | rollouts');
  for (const [name, url] of cases) {
    const base = await time(url(small));
    const run = await time(url(big));
    console.log(
      `${name} | ${base.warm.toFixed(2)} | ${run.warm.toFixed(2)} | ${(run.warm / base.warm).toFixed(1)}× | ${run.cold.toFixed(1)} | ${run.count}`,
    );
  }
} finally {
  await app.close();
  for (const client of blocking) client.disconnect();
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
  await rm(artifactDir, { recursive: true, force: true });
}
