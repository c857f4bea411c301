// A sweep's runs share their reference (docs/operations.md "Shared references"): `anneal submit
// sweep.yaml` of 4 GRPO runs against a control plane whose operator config serves GRPO from a
// vLLM endpoint. Every run of the grid starts from the same base model in one tenant, so each
// names one shared reference on its demand, which admission counts once (@anneal/store
// adapter-slots.redis.test.ts): together they need 4 × (policy versions + sync) + 1 slots, not
// 4 × (reference + policy versions + sync). A run of the same base in
// another tenant names a reference of its own.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResource, SweepResource } from '@anneal/protocol';
import { REDIS_URL, type Server, anneal, startServer } from './cli-process.ts';

const prefix = `{anneal-cli-sweep-ref-${randomUUID()}}`;
const ACME = `sweep-ref-acme-${randomUUID()}`;
const GLOBEX = `sweep-ref-globex-${randomUUID()}`;
const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const dir = mkdtempSync(join(tmpdir(), 'anneal-cli-sweep-ref-'));
let server: Server;
let url = '';

beforeAll(async () => {
  const config = join(dir, 'operator.yaml');
  // The endpoints are never called: demand and admission are decided at submission and start.
  writeFileSync(
    config,
    `
pools: { default: { slots: 8 } }
inference:
  vllm:
    type: vllm
    replicas: ["http://127.0.0.1:9"]
    servedModel: qwen3
    maxLoraRank: 32
    maxLoras: 16
trainers:
  skyrl:
    type: tinker
    url: http://127.0.0.1:9
    backend: skyrl-jax
    capabilities: { kinds: [grpo], losses: [importance_sampling], reduction: mean_per_sequence }
search: { local: { type: local } }
baseModels:
  qwen: { model: Qwen/Qwen3-30B-A3B-Instruct-2507, tokenizer: byte }
defaults: { pool: default, inference: vllm, trainer: skyrl, search: local, baseModel: qwen }
tenants: { acme: {}, globex: {} }
tokens:
  - { name: acme, sha256: "${sha(ACME)}", role: submitter, tenant: acme }
  - { name: globex, sha256: "${sha(GLOBEX)}", role: submitter, tenant: globex }
`,
  );
  const started = await startServer(
    ['control-plane', '--port', '0', '--config', config],
    { ANNEAL_KEY_PREFIX: prefix, ANNEAL_LOG_LEVEL: 'warn', REDIS_URL },
    /listening on (http:\/\/\S+)/,
  );
  server = started.server;
  url = started.match[1] ?? '';
}, 60_000);

afterAll(async () => {
  expect(await server?.stop()).toBe(0);
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  rmSync(dir, { recursive: true, force: true });
});

async function get<T>(path: string, token: string): Promise<T> {
  const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

describe('a sweep submitted through the CLI', () => {
  it('names one shared reference on all its runs (the admission script counts it once)', async () => {
    const file = join(dir, 'sweep.yaml');
    writeFileSync(
      file,
      [
        'kind: sweep',
        'name: lr-kl',
        'base: { kind: grpo, steps: 2, rollout: { maxPolicyLag: 1 } }',
        'grid:',
        '  optimizer.learningRate: [1.0e-5, 3.0e-5]',
        '  reward.lambdaLen: [0, 0.2]',
        '',
      ].join('\n'),
    );
    const env = { ANNEAL_URL: url, ANNEAL_TOKEN: ACME };
    const submitted = await anneal(['submit', file], env);
    expect(submitted.code, submitted.stderr).toBe(0);
    const sweep = await get<SweepResource>(`/v1/sweeps/${submitted.stdout.trim()}`, ACME);
    expect(sweep.runs).toHaveLength(4);
    const runs = await Promise.all(
      sweep.runs.map((r) => get<RunResource>(`/v1/runs/${r.id}`, ACME)),
    );
    const demands = runs.map((run) => run.adapterDemand?.[0]);
    const reference = demands[0]?.reference;
    expect(reference).toMatch(/^ref-[0-9a-f]{16}$/);
    for (const demand of demands) {
      // shared reference 1 + policy versions 2 (maxPolicyLag 1 + 1) + sync 1
      expect(demand).toMatchObject({ endpoint: 'vllm', slots: 4, reference });
      expect(demand?.detail).toMatch(/^shared reference 1 \+ /);
    }

    // The same base in another tenant: a reference of its own, never the sweep's.
    const single = join(dir, 'run.yaml');
    writeFileSync(single, 'kind: grpo\nsteps: 2\nrollout: { maxPolicyLag: 1 }\n');
    const other = await anneal(['submit', single], { ANNEAL_URL: url, ANNEAL_TOKEN: GLOBEX });
    expect(other.code, other.stderr).toBe(0);
    const globex = await get<RunResource>(`/v1/runs/${other.stdout.trim()}`, GLOBEX);
    expect(globex.adapterDemand?.[0]?.reference).toMatch(/^ref-[0-9a-f]{16}$/);
    expect(globex.adapterDemand?.[0]?.reference).not.toBe(reference);
  });
});
