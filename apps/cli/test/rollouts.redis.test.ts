// `anneal runs rollouts` end to end: `anneal up` (control plane + embedded worker, one artifact
// root) runs two small GRPO runs on the embedded engines — the same prompts (same seed), another
// learning rate — whose worker writes the rollout ledger; the CLI, over real HTTP, prints a step
// sorted by reward, one rollout in full, a prompt across steps, a text search, the two runs side
// by side, and names a bad parameter.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutPage, RolloutRecord } from '@anneal/protocol';
import { REDIS_URL, type Server, anneal, startServer } from './cli-process.ts';

const prefix = `{anneal-rollouts-${randomUUID()}}`;
const token = `rollouts-token-${randomUUID()}`;
let server: Server | undefined;
let url = '';
let dir = '';
let env: Record<string, string> = {};
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const runs: string[] = [];

async function api<T>(pathname: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${url}${pathname}`, { headers, ...init });
  const body = (await res.json()) as T;
  expect(res.ok, JSON.stringify(body)).toBe(true);
  return body;
}

async function finished(id: string, timeoutMs = 90_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await api<{ state: string; error?: string }>(`/v1/runs/${id}`);
    if (['succeeded', 'failed', 'cancelled'].includes(run.state)) return run.error ?? run.state;
    if (Date.now() > deadline) throw new Error(`run ${id} still ${run.state}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const GRPO = (learningRate: number) => ({
  kind: 'grpo',
  steps: 2,
  seed: 7,
  rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 16, temperature: 1 },
  optimizer: { learningRate },
});

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-cli-rollouts-'));
  const started = await startServer(
    ['up', '--port', '0'],
    {
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_TOKEN: token,
      REDIS_URL,
      ANNEAL_ARTIFACT_DIR: dir,
      ANNEAL_WORKER_ID: `rollouts-${randomUUID().slice(0, 8)}`,
    },
    /^ready (http:\/\/127\.0\.0\.1:\d+)\n/m,
    60_000,
  );
  server = started.server;
  url = started.match[1] ?? '';
  env = { ANNEAL_URL: url, ANNEAL_TOKEN: token };
  for (const lr of [1e-3, 3e-3]) {
    const { id } = await api<{ id: string }>('/v1/runs', {
      method: 'POST',
      body: JSON.stringify(GRPO(lr)),
    });
    runs.push(id);
  }
  for (const id of runs) expect(await finished(id)).toBe('succeeded');
}, 240_000);

afterAll(async () => {
  await server?.stop();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The reward of each printed rollout header's R line, in order. */
const printedRewards = (stdout: string) =>
  [...stdout.matchAll(/^R (-?\d+\.\d+) = r_base/gm)].map((m) => Number(m[1]));

describe('anneal runs rollouts (embedded GRPO runs through anneal up)', () => {
  it('prints a step sorted by reward with its breakdown, and one rollout in full', async () => {
    const [a] = runs as [string];
    const page = await api<RolloutPage>(`/v1/runs/${a}/rollouts?step=1&role=policy`);
    expect(page.rollouts).toHaveLength(4); // 2 prompts × G = 2
    const out = await anneal(
      ['runs', 'rollouts', a, '--step', '1', '--role', 'policy', '--sort', '-reward'],
      env,
    );
    expect(out.code, out.stderr).toBe(0);
    const rewards = printedRewards(out.stdout);
    const want = page.rollouts.map((r) => r.rewards!.reward).sort((x, y) => y - x);
    expect(rewards).toEqual(want.map((r) => Number(r.toFixed(3))));
    expect(out.stdout).toMatch(
      /^── 1-\d-\d {2}step 1 · group \d · policy #\d · policy v\d+ · prompt /m,
    );
    expect(out.stdout).toMatch(/Â [+-]\d\.\d{3} {3}ratio \d\.\d{4} \[/);

    const first = page.rollouts[0]!;
    const one = await anneal(['runs', 'rollouts', a, first.id], env);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toContain(`── ${first.id}  step 1`);
    expect(one.stdout).toContain(`finish ${first.finish}`);
    const json = JSON.parse(
      (await anneal(['runs', 'rollouts', a, first.id, '--json'], env)).stdout,
    );
    expect(json).toEqual(await api<RolloutRecord>(`/v1/runs/${a}/rollouts/${first.id}`));
    // its reference side, scored against it
    const reference = await anneal(['runs', 'rollouts', a, first.pairedWith], env);
    expect(reference.stdout).toContain('not scored (reference rollout)');
  });

  it('follows a prompt across steps, finds text, and pages with --cursor', async () => {
    const [a] = runs as [string];
    const all = await api<RolloutPage>(`/v1/runs/${a}/rollouts?limit=200`);
    expect(new Set(all.rollouts.map((r) => r.step))).toEqual(new Set([1, 2]));
    const promptId = all.rollouts[0]!.promptId;
    const out = await anneal(['runs', 'rollouts', a, '--prompt', promptId, '--json'], env);
    const followed = JSON.parse(out.stdout) as RolloutPage;
    expect(followed.rollouts.map((r) => r.id)).toEqual(
      all.rollouts.filter((r) => r.promptId === promptId).map((r) => r.id),
    );
    const word = all.rollouts[0]!.prompt.text.split(/\s+/).find((w) => w.length > 4)!;
    const found = JSON.parse(
      (await anneal(['runs', 'rollouts', a, '--grep', word.toUpperCase(), '--json'], env)).stdout,
    ) as RolloutPage;
    expect(found.rollouts.length).toBeGreaterThan(0);
    expect(
      found.rollouts.every((r) => JSON.stringify(r).toLowerCase().includes(word.toLowerCase())),
    ).toBe(true);
    const firstPage = await anneal(['runs', 'rollouts', a, '--limit', '3'], env);
    const cursor = /^more: --cursor (\S+)$/m.exec(firstPage.stdout)?.[1];
    expect(cursor).toBeDefined();
    const next = JSON.parse(
      (await anneal(['runs', 'rollouts', a, '--limit', '3', '--cursor', cursor!, '--json'], env))
        .stdout,
    ) as RolloutPage;
    expect(next.rollouts.map((r) => r.id)).toEqual(all.rollouts.slice(3, 6).map((r) => r.id));
  });

  it('--vs RUN shows the same prompts of both runs side by side', async () => {
    const [a, b] = runs as [string, string];
    const out = await anneal(
      ['runs', 'rollouts', a, '--step', '1', '--role', 'policy', '--vs', b],
      env,
    );
    expect(out.code, out.stderr).toBe(0);
    const blocks = out.stdout.split(/^══ /m).slice(1);
    expect(blocks).toHaveLength(2); // the step's two prompts
    for (const block of blocks) {
      const [header, sides] = [block.split('\n')[0]!, block.split('\n')[1]!];
      expect(header).toMatch(/^prompt \S+: /);
      // same seed, same prompts: the other run has rollouts of each
      expect(sides).toMatch(
        new RegExp(`^${a} \\(2 rollouts, mean R -?\\d\\.\\d{3}\\)\\s+│ ${b} \\(\\d+ rollouts`),
      );
      expect(sides).not.toContain('(0 rollouts');
      expect(block).toMatch(/answer: .*│ {3}answer: /);
    }
  });

  it('names a bad parameter and exits 1', async () => {
    const out = await anneal(['runs', 'rollouts', runs[0]!, '--sort', 'bogus'], env);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('ANNEAL_ERR_VALIDATION');
    expect(out.stderr).toContain('/query/sort');
  });
});
