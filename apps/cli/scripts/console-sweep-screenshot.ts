// The README's sweep screenshot (docs/images/console-sweep.png), from a real sweep on the
// embedded engines: the demo's local stack (control plane + worker in-process, src/demo/stack.ts)
// runs a sweep of 4 short SFT runs (the demo's SFT spec, learning rate × batch size) to the end,
// then headless Chromium signs in with the stack's token and photographs the sweep's page: its
// runs' step curves overlaid, their grid values as the legend.
// Run: `npm run screenshots:sweep -w @anneal/cli` (Redis at REDIS_URL or 127.0.0.1:6379,
// Chromium at CHROMIUM_BIN or /usr/bin/chromium).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { chromium } from 'playwright-core';
import type { SweepResource } from '@anneal/protocol';
import { deleteKeysWithPrefix } from '@anneal/store';
import { demoSizes, sftSpec } from '../src/demo/specs.ts';
import { startStack } from '../src/demo/stack.ts';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleConsole } from '../../../scripts/bundle-console.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const chromiumBin = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

const sizes = demoSizes({ seed: 0, stepsScale: 1, quick: true });
const { name: _name, ...base } = sftSpec({ ...sizes, sft: { ...sizes.sft, steps: 30 } }, 0);
const sweepDoc = {
  kind: 'sweep',
  name: 'sft lr × batch',
  base: { ...base, checkpointInterval: 30 },
  grid: { 'optimizer.learningRate': [2e-3, 5e-3], batchSize: [4, 8] },
  select: { metric: 'loss', mode: 'min' },
};

const token = randomBytes(24).toString('base64url');
const work = await mkdtemp(path.join(tmpdir(), 'anneal-sweep-screenshot-'));
await (bundleConsole as () => Promise<unknown>)(); // the console the stack serves (dist/console)
const keyPrefix = `{anneal-sweep-screenshot-${randomUUID()}}`;
const stack = await startStack({
  redisUrl,
  keyPrefix,
  token,
  artifactDir: path.join(work, 'artifacts'),
  logFile: path.join(work, 'stack.log'),
  runSeriesGraceSeconds: 1,
});

async function api<T>(method: string, route: string, body?: unknown): Promise<T> {
  const res = await fetch(`${stack.url}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

const browser = await chromium.launch({ executablePath: chromiumBin, headless: true });
try {
  const started = Date.now();
  const sweep = await api<SweepResource>('POST', '/v1/sweeps', sweepDoc);
  console.error(`screenshots: sweep ${sweep.id} (${sweep.runs.length} sft runs)…`);
  for (;;) {
    const now = await api<SweepResource>('GET', `/v1/sweeps/${sweep.id}`);
    if (now.done) {
      if (now.counts.succeeded !== now.runs.length) throw new Error(JSON.stringify(now.counts));
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  console.error(`screenshots: sweep done in ${((Date.now() - started) / 1000).toFixed(0)} s`);

  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(30_000);
  await page.goto(`${stack.url}/console/`);
  await page.fill('#token', token);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('table.runs');
  await page.goto(`${stack.url}/console/#/sweeps/${sweep.id}`);
  await page.waitForSelector('.compare-panels figure.panel');
  await page.screenshot({ path: path.join(root, 'docs/images/console-sweep.png') });
  console.error('screenshots: docs/images/console-sweep.png');
} finally {
  await browser.close();
  await stack.close();
  const redis = new Redis(redisUrl);
  await deleteKeysWithPrefix(redis, keyPrefix);
  await redis.quit();
  await rm(work, { recursive: true, force: true });
}
