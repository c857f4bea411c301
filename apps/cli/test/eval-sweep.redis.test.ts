// The eval done criterion end to end on the embedded engines, through the REST API of
// `anneal up` (local mode): an SFT run, then an eval of two checkpoints (the base model,
// `models: [{}]`, which local mode once accepted and failed with "no trainer endpoint", and the
// SFT checkpoint) over the default budget sweep b = 0..10 with prices; then GET /v1/runs/{id}/results, the
// chart, and `anneal runs results --format csv`. Small sizes: well under a minute on 2 cores.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, type Server, anneal, startServer } from './cli-process.ts';

const prefix = `{anneal-eval-sweep-${randomUUID()}}`;
const token = `eval-sweep-token-${randomUUID()}`;
let server: Server | undefined;
let url = '';
let dir = '';
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-eval-sweep-'));
  const started = await startServer(
    ['up', '--port', '0'],
    {
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_TOKEN: token,
      REDIS_URL,
      ANNEAL_ARTIFACT_DIR: dir,
      ANNEAL_WORKER_ID: `eval-${randomUUID().slice(0, 8)}`,
    },
    /^ready (http:\/\/127\.0\.0\.1:\d+)\n/m,
    60_000,
  );
  server = started.server;
  url = started.match[1] ?? '';
}, 90_000);

afterAll(async () => {
  await server?.stop();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function submit(spec: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers,
    body: JSON.stringify(spec),
  });
  const body = (await res.json()) as { id: string };
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.id;
}

async function finished(
  id: string,
  timeoutMs = 60_000,
): Promise<{ state: string; [k: string]: unknown }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = (await (await fetch(`${url}/v1/runs/${id}`, { headers })).json()) as {
      state: string;
    };
    if (['succeeded', 'failed', 'cancelled'].includes(run.state)) return run;
    if (Date.now() > deadline) throw new Error(`run ${id} still ${run.state}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('eval budget sweep through the REST API (embedded engines)', () => {
  it('two checkpoints × b = 0..10: results table, cost column and chart', async () => {
    const sft = await submit({
      kind: 'sft',
      steps: 4,
      batchSize: 4,
      checkpointInterval: 4,
      optimizer: { learningRate: 5e-3 },
    });
    expect((await finished(sft)).state).toBe('succeeded');
    const evalId = await submit({
      kind: 'eval',
      models: [{}, { checkpoint: { run: sft } }],
      datasets: ['search-qa'],
      examples: 2,
      budgets: { maxOutputTokens: 24 }, // the default sweep, b = 0..10
      prices: { promptPerMillionTokens: 0.5, completionPerMillionTokens: 1.5, perToolCall: 0.005 },
    });
    const run = await finished(evalId);
    expect(run.state, JSON.stringify(run)).toBe('succeeded');

    const res = await fetch(`${url}/v1/runs/${evalId}/results`, { headers });
    expect(res.status).toBe(200);
    const results = (await res.json()) as {
      complete: boolean;
      checkpoints: Array<{
        label: string;
        knee: number | null;
        cells: Array<{
          budget: number;
          n: number;
          accuracy: number;
          costPerQueryUsd: number;
          meanToolCalls: number;
        }>;
      }>;
    };
    expect(results.complete).toBe(true);
    expect(results.checkpoints.map((c) => c.label)).toEqual(['tiny', sft]);
    for (const c of results.checkpoints) {
      expect(c.cells.map((x) => x.budget)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(c.knee).toEqual(expect.any(Number));
      for (const x of c.cells) {
        expect(x.n).toBe(2);
        expect(x.costPerQueryUsd).toBeGreaterThan(0);
        expect(x.meanToolCalls).toBeGreaterThanOrEqual(0);
      }
    }

    // The SFT checkpoint (tool-use trajectories) is served, not the base weights again.
    const calls = (i: number) => results.checkpoints[i]!.cells.map((x) => x.meanToolCalls);
    expect(calls(1)).not.toEqual(calls(0));

    const svg = await fetch(`${url}/v1/runs/${evalId}/results/curve.svg`, { headers });
    expect(svg.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect((await svg.text()).match(/class="curve"/g)).toHaveLength(2);

    const csv = await anneal(['runs', 'results', evalId, '--format', 'csv'], {
      ANNEAL_URL: url,
      ANNEAL_TOKEN: token,
    });
    expect(csv.code, csv.stderr).toBe(0);
    console.log(csv.stdout);
    expect(csv.stdout.trim().split(/\r?\n/)).toHaveLength(1 + 22);

    // Each answer behind the numbers: 2 checkpoints × 11 budgets × 2 questions, and one question
    // followed through every cell (`anneal runs items --prompt`), as the API lists it.
    const cli = { ANNEAL_URL: url, ANNEAL_TOKEN: token };
    const page = (await (
      await fetch(`${url}/v1/runs/${evalId}/items?limit=200`, { headers })
    ).json()) as { items: Array<{ id: string; step: number; correct: boolean }> };
    expect(page.items).toHaveLength(2 * 11 * 2);
    const question = page.items[0]!.id;
    const followed = await anneal(
      ['runs', 'items', evalId, '--prompt', question, '--limit', '200'],
      cli,
    );
    expect(followed.code, followed.stderr).toBe(0);
    const blocks =
      followed.stdout.match(/^── step \d+ · checkpoint [01] · b \d+ · (\S+) {2}[✓✗]/gm) ?? [];
    expect(blocks).toHaveLength(22);
    expect(blocks.every((b) => b.includes(` · ${question}  `))).toBe(true);
    const wrong = JSON.parse(
      (await anneal(['runs', 'items', evalId, '--wrong', '--json'], cli)).stdout,
    );
    expect(wrong.items.map((x: { step: number }) => x.step)).toEqual(
      page.items
        .filter((x) => !x.correct)
        .slice(0, 50)
        .map((x) => x.step),
    );
  }, 120_000);
});
