// Console bench: how long the web console's runs list takes to open with 10,000 runs in the
// tenant, in a real headless Chromium, next to the same page for a tenant with one run (the
// baseline, same run, same browser). The list is one GET /v1/runs page whatever the tenant holds,
// so the two should be close; the target is under a second. Also times that API call alone.
// Run: `npm run bench:console -w bench` (about 1 min: seeding 10,000 runs is most of it).
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { chromium } from 'playwright-core';
import { buildApp, sha256Hex } from '@anneal/control-plane';
import { type RunSpec, validateOperatorConfig } from '@anneal/protocol';
import { createRun, createStoreContext, deleteKeysWithPrefix } from '@anneal/store';
import { chromiumPath } from '@anneal/testing';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleConsole } from '../../scripts/bundle-console.mjs';

const RUNS = Number(process.env.BENCH_CONSOLE_RUNS ?? 10_000);
const LOADS = 15;
const TARGET_MS = 1000;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const prefix = `{anneal-bench-console-${randomUUID()}}`;
const tokens = { big: `big-${randomUUID()}`, small: `small-${randomUUID()}` };
const operator = validateOperatorConfig({
  pools: { default: { slots: 1 } },
  inference: { embedded: { type: 'embedded' } },
  trainers: {
    embedded: {
      type: 'embedded',
      capabilities: {
        kinds: ['sft', 'rm', 'grpo', 'eval'],
        losses: ['cross_entropy', 'importance_sampling', 'ppo', 'bradley_terry'],
      },
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
  tenants: { big: {}, small: {} },
  tokens: Object.entries(tokens).map(([tenant, token]) => ({
    name: tenant,
    sha256: sha256Hex(token),
    role: 'submitter',
    tenant,
    rateLimit: { max: 1_000_000, windowSeconds: 60 },
  })),
});
if (!operator.ok) throw new Error(JSON.stringify(operator.errors));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)] ?? NaN;

const redis = new Redis(redisUrl, { maxRetriesPerRequest: null, enableAutoPipelining: true });
const blocking: Redis[] = [];
const consoleDir = await mkdtemp(path.join(tmpdir(), 'anneal-bench-console-'));
await (bundleConsole as (o: { outdir: string }) => Promise<unknown>)({ outdir: consoleDir });
const app = await buildApp({
  operator: operator.value,
  redis,
  prefix,
  defaultMetrics: false,
  consoleDir,
  createBlockingClient: () => {
    const client = new Redis(redisUrl, { maxRetriesPerRequest: null });
    blocking.push(client);
    return client;
  },
});
const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true });
try {
  // A resolved spec as the API stores it, then RUNS runs written straight to the store.
  const submitted = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { authorization: `Bearer ${tokens.small}`, 'content-type': 'application/yaml' },
    payload: 'kind: grpo\nname: baseline\nlabels: {team: search}\n',
  });
  if (submitted.statusCode !== 201) throw new Error(`submit: ${submitted.body}`);
  const spec = (submitted.json() as { spec: RunSpec & { pool: string } }).spec;
  const store = createStoreContext(redis, prefix);
  const seeded = performance.now();
  for (let i = 0; i < RUNS; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, RUNS - i) }, (_, j) =>
        createRun(store, { tenant: 'big', spec: { ...spec, name: `run-${i + j}` } as never }),
      ),
    );
  }
  const seedMs = performance.now() - seeded;
  const base = await app.listen({ host: '127.0.0.1', port: 0 });

  /** ms from navigation to a rendered first page of the runs list (browser clock). */
  async function openList(token: string, rows: number): Promise<number> {
    const context = await browser.newContext();
    // The token a sign-in would have stored, set before the page's scripts run.
    await context.addInitScript({
      content: `sessionStorage.setItem('anneal.token', ${JSON.stringify(token)})`,
    });
    const page = await context.newPage();
    await page.goto(`${base}/console/#/runs`);
    // The last row of the page drawn. Not page.waitForFunction: it evaluates its string in the
    // page, which the console's CSP refuses (no 'unsafe-eval').
    await page.waitForSelector(`table.runs tbody tr:nth-child(${rows})`);
    // A string: this workspace type-checks against Node, not the DOM.
    const ms: number = await page.evaluate('performance.now()');
    await context.close();
    return ms;
  }
  async function apiPage(token: string): Promise<number> {
    const started = performance.now();
    const res = await fetch(`${base}/v1/runs?limit=50`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await res.arrayBuffer();
    return performance.now() - started;
  }

  const big: number[] = [];
  const small: number[] = [];
  const bigApi: number[] = [];
  const smallApi: number[] = [];
  await openList(tokens.big, 50); // warm-up: browser start, first compile
  await openList(tokens.small, 1);
  for (let i = 0; i < LOADS; i++) {
    // Interleaved, so load on a shared machine hits both alike.
    big.push(await openList(tokens.big, 50));
    small.push(await openList(tokens.small, 1));
    bigApi.push(await apiPage(tokens.big));
    smallApi.push(await apiPage(tokens.small));
  }
  const row = (label: string, xs: number[], ref: number[]) =>
    `| ${label.padEnd(48)} | ${median(xs).toFixed(1).padStart(8)} | ${p90(xs).toFixed(1).padStart(8)} | ${(median(xs) / median(ref)).toFixed(2).padStart(5)} |`;
  console.log(
    `\nconsole bench: ${RUNS} runs seeded in ${(seedMs / 1000).toFixed(1)} s; ${LOADS} loads each; load average ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log(`| ${'what'.padEnd(48)} | median ms |   p90 ms | ratio |`);
  console.log(`| ${'-'.repeat(48)} | --------: | -------: | ----: |`);
  console.log(row(`open runs list, ${RUNS} runs (navigation → table)`, big, small));
  console.log(row('open runs list, 1 run (baseline)', small, small));
  console.log(row(`GET /v1/runs?limit=50, ${RUNS} runs`, bigApi, smallApi));
  console.log(row('GET /v1/runs?limit=50, 1 run (baseline)', smallApi, smallApi));
  const met = median(big) < TARGET_MS;
  console.log(
    `${met ? 'MET' : 'MISSED'}: the runs list with ${RUNS} runs opens in ${median(big).toFixed(0)} ms (median; target < ${TARGET_MS} ms)`,
  );
} finally {
  await browser.close();
  await app.close();
  await Promise.all(blocking.map((c) => c.quit().catch(() => c.disconnect())));
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
  await rm(consoleDir, { recursive: true, force: true });
}
