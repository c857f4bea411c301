// Many runs, one fleet, on this machine: two GRPO runs and one eval run,
// submitted over the REST API to a real control plane, run by two worker processes that share one
// embedded sampler server (`anneal serve sampler`, speaking the vLLM routes Anneal's vLLM client
// uses, its weight-set capacity declared as the endpoint's `maxLoras`) and one embedded trainer
// server (`anneal serve trainer`, the Tinker HTTP subset), each a process of its own. Asserted:
// - admission: maxLoras 4 holds one GRPO run (shared reference + policy + sync = 3) and the eval
//   (1); the second GRPO run shares the reference but its own 2 slots do not fit, so it waits
//   queued with its reason and starts once the first gives its slots back; the sampler never
//   held more than 4 weight sets and evicted none;
// - isolation: every completion was served by the weight set it asked for, and that set is an
//   export of the run whose name it carries, or the shared reference both GRPO runs hold (the
//   sampler records (requested, served, path));
// - fair share: the endpoint declares maxNumSeqs 4; both workers sample inside their runs' shares
//   (one Redis-coordinated limit), so the sampler never had more than 4 sequences in flight, and
//   every run's share of it is on its record;
// - all three runs succeed, on both workers, and no weight set is left loaded at the end.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { type RunningControlPlane, parseEnv, startControlPlane } from '@anneal/control-plane';
import { DEFAULT_BASE_MODEL, type ServedCompletion, maxLorasOf } from '@anneal/engines';
import { type RunResource, parseOperatorConfig } from '@anneal/protocol';
import { type StoreContext, createStoreContext, deleteKeysWithPrefix, getRun } from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import { eventually } from '@anneal/testing';
import {
  type RealWorker,
  killHard,
  spawnRealWorker,
} from '../../worker/test/reliability/real-worker.ts';
import { REDIS_URL, type Server, startServer } from './cli-process.ts';

const TOKEN = `shared-sampler-${randomUUID()}`;
const TRAINER_KEY = 'shared-trainer-key';
const MAX_LORAS = 4;
/** The endpoint's in-flight capacity (`maxNumSeqs` × 1 replica), shared by weight across both
 * workers through Redis: below what one GRPO step sends at once (2 prompts × policy and
 * reference requests of n = 2), so the limit is what keeps the sampler at or under it. */
const MAX_NUM_SEQS = 4;
const GRPO = [
  'kind: grpo',
  'steps: 2',
  'rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 12 }',
].join('\n');
const EVAL = [
  'kind: eval',
  'models: [{}]',
  'datasets: [search-qa]',
  'examples: 2',
  'budgets: { toolCallBudgets: [1], maxToolCalls: 1, maxOutputTokens: 8 }',
].join('\n');

interface Stack {
  dir: string;
  prefix: string;
  redis: Redis;
  store: StoreContext;
  plane: RunningControlPlane;
  trainer: Server;
  sampler: Server;
  samplerUrl: string;
  workers: RealWorker[];
}
let stack: Stack | undefined;

afterEach(async () => {
  const s = stack;
  stack = undefined;
  if (!s) return;
  for (const worker of s.workers) await killHard(worker);
  await Promise.all([s.sampler.stop(), s.trainer.stop()]);
  await s.plane.close();
  await deleteKeysWithPrefix(s.redis, s.prefix);
  await s.redis.quit();
  await rm(s.dir, { recursive: true, force: true });
});

async function start(): Promise<Stack> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-shared-sampler-'));
  const artifacts = path.join(dir, 'trainer'); // the trainer's exports = the sampler's adapters.root
  // Both servers are processes of their own, started as an operator would.
  const [trainerStarted, samplerStarted] = await Promise.all([
    startServer(
      [
        'serve',
        'trainer',
        '--port',
        '0',
        '--artifact-dir',
        artifacts,
        '--threads',
        '1',
        '--api-key-env',
        'TRAINER_KEY',
      ],
      { TRAINER_KEY },
      /embedded trainer on (http:\/\/\S+)/,
      60_000,
    ),
    startServer(
      [
        'serve',
        'sampler',
        '--port',
        '0',
        '--served-model-name',
        'tiny',
        '--max-loras',
        String(MAX_LORAS),
        '--threads',
        '1',
      ],
      {},
      /embedded sampler on (http:\/\/\S+)/,
      60_000,
    ),
  ]);
  const trainer = trainerStarted.server;
  const trainerUrl = trainerStarted.match[1] as string;
  const sampler = samplerStarted.server;
  const samplerUrl = samplerStarted.match[1] as string;
  const config = `
pools: { default: { slots: 1 } }
inference:
  shared:
    type: vllm
    server: anneal-embedded
    replicas: ["${samplerUrl}"]
    servedModel: tiny
    maxLoras: ${MAX_LORAS}
    maxNumSeqs: ${MAX_NUM_SEQS}
    logprobsMode: processed_logprobs
    adapters: { root: "${artifacts}" }
trainers:
  embedded:
    type: tinker
    url: ${trainerUrl}
    apiKeyEnv: TRAINER_KEY
    backend: embedded
    capabilities: { kinds: [grpo, eval], losses: [importance_sampling], reduction: sum }
search: { local: { type: local } }
baseModels: { tiny: { model: ${DEFAULT_BASE_MODEL}, tokenizer: byte } }
defaults: { pool: default, inference: shared, trainer: embedded, search: local, baseModel: tiny }
tenants: { acme: {} }
tokens:
  - { name: op, sha256: "${createHash('sha256').update(TOKEN).digest('hex')}", role: operator, tenant: acme }
`;
  const parsed = parseOperatorConfig(config);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const configPath = path.join(dir, 'anneal.yaml');
  await writeFile(configPath, config);
  const prefix = `{anneal-shared-${randomUUID()}}`;
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
  // One run slot each: the first GRPO run and the eval run on different workers.
  const workers = ['shared-w1', 'shared-w2'].map((id) =>
    spawnRealWorker({
      id,
      heartbeatTtlSeconds: 5,
      env: {
        REDIS_URL,
        ANNEAL_KEY_PREFIX: prefix,
        ANNEAL_CONFIG: configPath,
        ANNEAL_ARTIFACT_DIR: path.join(dir, `worker-${id}`),
        ANNEAL_METRICS_PORT: '0',
        ANNEAL_METRICS_HOST: '127.0.0.1',
        ANNEAL_HEARTBEAT_SECONDS: '0.5',
        ANNEAL_LOCK_DURATION_MS: '8000',
        ANNEAL_STALLED_INTERVAL_MS: '1000',
        TRAINER_KEY,
      },
    }),
  );
  stack = {
    dir,
    prefix,
    redis,
    store: createStoreContext(redis, prefix),
    plane,
    trainer,
    sampler,
    samplerUrl,
    workers,
  };
  return stack;
}

async function submit(s: Stack, yaml: string): Promise<string> {
  const res = await fetch(`${s.plane.url}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/yaml' },
    body: yaml,
  });
  const body = (await res.json()) as RunResource;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.id;
}

function detail(s: Stack): () => string {
  return () =>
    s.workers.map((w) => `--- ${w.id}\n${w.output().slice(-3000)}`).join('\n') +
    `\n--- sampler\n${s.sampler.stderr().slice(-2000)}` +
    `\n--- trainer\n${s.trainer.stderr().slice(-2000)}`;
}

async function reached(s: Stack, runId: string, state: 'running' | 'succeeded') {
  return eventually(
    async () => {
      const run = await getRun(s.store, runId);
      if (run?.state === 'failed')
        throw new Error(`run ${runId} failed: ${run.error}\n${detail(s)()}`);
      return run?.state === state ? run : undefined;
    },
    240_000,
    `run ${runId} ${state}`,
    { detail: detail(s), intervalMs: 100 },
  );
}

async function samplerMetrics(s: Stack): Promise<string> {
  return (await fetch(`${s.samplerUrl}/metrics`)).text();
}
const gauge = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);

describe('two GRPO runs and an eval on two workers share one embedded sampler', () => {
  it('admits by the sampler capacity (one run waits with its reason), serves each run only its own weight sets, and leaves none loaded', async () => {
    const s = await start();
    // What `anneal endpoints check` compares with the declared maxLoras.
    expect(maxLorasOf(await samplerMetrics(s))).toBe(MAX_LORAS);

    const first = await submit(s, GRPO);
    const running = await reached(s, first, 'running');
    // The other worker takes the second run at once and finds no room for it.
    const second = await submit(s, GRPO);
    const waiting = await eventually(
      async () => (await getRun(s.store, second))?.waitingReason,
      120_000,
      'the second GRPO run waits for adapter slots',
      { detail: detail(s), intervalMs: 100 },
    );
    expect(waiting).toBe(
      `waiting for 2 adapter slots on inference endpoint 'shared': 3 of ${MAX_LORAS} held by ` +
        `runs ${first} (2) and 1 shared reference (1 each)`,
    );
    // The eval fits in the slot left, but queues behind the waiting run (no overtaking).
    const evaluation = await submit(s, EVAL);
    const done = [];
    for (const id of [first, second, evaluation]) done.push(await reached(s, id, 'succeeded'));
    const [a, b, e] = done;
    // The second started once the first gave its slots back; both workers ran runs.
    expect(Date.parse(b?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(a?.endedAt ?? ''));
    expect(Date.parse(e?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(a?.endedAt ?? ''));
    expect(b?.waitingReason).toBeUndefined();
    expect(new Set([running.workerId, b?.workerId, e?.workerId])).toEqual(
      new Set(['shared-w1', 'shared-w2']),
    );

    // Isolation: the sampler's record of every completion.
    const served = (await (
      await fetch(`${s.samplerUrl}/anneal/served`)
    ).json()) as ServedCompletion[];
    const runs = [first, evaluation, second];
    const runOf = (name: string) => runs.find((id) => name.startsWith(`${id}-`));
    // Both GRPO runs start from the base model: they score against one shared reference.
    const reference = running.adapterDemand?.[0]?.reference;
    expect(reference).toMatch(/^ref-[0-9a-f]{16}$/);
    expect(b?.adapterDemand?.[0]?.reference).toBe(reference);
    for (const record of served) {
      expect(record.served).toBe(record.requested);
      if (record.requested.startsWith(`${reference}@shared.`)) {
        // the shared reference is the starting export of one of the runs that share it
        expect([first, second]).toContain(runOf(path.basename(record.path)));
        continue;
      }
      expect(runOf(record.requested), record.requested).toBeDefined();
      // the weight set is an export the trainer wrote for that run (`<runId>-…`)
      expect(runOf(path.basename(record.path)), record.path).toBe(runOf(record.requested));
    }
    for (const id of runs) {
      expect(
        served.some((r) => runOf(r.requested) === id),
        `completions of ${id}`,
      ).toBe(true);
    }
    expect(served.some((r) => r.requested.startsWith(`${reference}@shared.`))).toBe(true);

    // Fair share: the two workers together never had more sequences in flight on the sampler
    // than the endpoint's declared capacity, and each run was served its share, by its weight.
    const afterRuns = await samplerMetrics(s);
    expect(gauge(afterRuns, 'anneal_sampler_sequences_running_peak')).toBeGreaterThan(0);
    expect(gauge(afterRuns, 'anneal_sampler_sequences_running_peak')).toBeLessThanOrEqual(
      MAX_NUM_SEQS,
    );
    for (const run of [a, b, e]) {
      const share = run?.fleetShare?.['shared'];
      expect(share, `fleetShare of ${run?.id}`).toMatchObject({ weight: 1 });
      expect(share?.requests).toBeGreaterThan(0);
      expect(share?.tokens).toBeGreaterThan(0);
    }

    const metrics = await samplerMetrics(s);
    expect(gauge(metrics, 'anneal_sampler_weight_sets_resident_peak')).toBeLessThanOrEqual(
      MAX_LORAS,
    );
    expect(gauge(metrics, 'anneal_sampler_weight_set_evictions_total')).toBe(0);
    // Every run unloaded what it loaded.
    await eventually(
      async () => gauge(await samplerMetrics(s), 'anneal_sampler_weight_sets_listed') === 0,
      30_000,
      'no weight set left loaded',
    );
  }, 600_000);
});
