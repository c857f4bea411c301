// The README's console screenshots (docs/images/console-*.png), from a real run on the embedded
// engines: the demo's local stack (control plane + worker in-process, src/demo/stack.ts), an SFT
// run then a GRPO run from it with the demo's specs at a smaller size, then headless Chromium
// signs in with the stack's token and photographs the GRPO run's page and its rollout browser.
// Run: `npm run screenshots:console -w @anneal/cli` (Redis at REDIS_URL or 127.0.0.1:6379,
// Chromium at CHROMIUM_BIN or /usr/bin/chromium; about 10–16 minutes on 2 cores, most of it the SFT run).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { chromium } from 'playwright-core';
import { type RunResource, isTerminal } from '@anneal/protocol';
import { deleteKeysWithPrefix } from '@anneal/store';
import { demoSizes, grpoSpec, sftSpec } from '../src/demo/specs.ts';
import { startStack } from '../src/demo/stack.ts';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleConsole } from '../../../scripts/bundle-console.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const images = path.join(root, 'docs/images');
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const chromiumBin = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

// The demo's specs (seed 0): its SFT run, then a shorter GRPO run (12 steps of 8 prompts × 4).
const sizes = demoSizes({ seed: 0, stepsScale: 1, quick: false });
sizes.grpo = { ...sizes.grpo, steps: 12, promptsPerStep: 8, groupSize: 4, checkpointInterval: 4 };

const token = randomBytes(24).toString('base64url');
const work = await mkdtemp(path.join(tmpdir(), 'anneal-screenshots-'));
await (bundleConsole as () => Promise<unknown>)(); // the console the stack serves (dist/console)
const keyPrefix = `{anneal-screenshots-${randomUUID()}}`;
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

async function finished(id: string): Promise<RunResource> {
  for (;;) {
    const run = await api<RunResource>('GET', `/v1/runs/${id}`);
    if (isTerminal(run.state)) {
      if (run.state !== 'succeeded') throw new Error(`${id} ${run.state}: ${run.error ?? ''}`);
      return run;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

const browser = await chromium.launch({ executablePath: chromiumBin, headless: true });
try {
  const sft = await api<RunResource>('POST', '/v1/runs', sftSpec(sizes, 0));
  console.error(`screenshots: sft ${sft.id} (${sizes.sft.steps} steps)…`);
  await finished(sft.id);
  const grpo = await api<RunResource>('POST', '/v1/runs', grpoSpec(sizes, 0, sft.id, undefined));
  console.error(`screenshots: grpo ${grpo.id} (${sizes.grpo.steps} steps)…`);
  await finished(grpo.id);

  // The first screen of each page, as a user opening it sees it.
  const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  page.setDefaultTimeout(30_000);
  await page.goto(`${stack.url}/console/`);
  await page.fill('#token', token);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('table.runs');
  await page.goto(`${stack.url}/console/#/runs/${grpo.id}`);
  await page.waitForSelector('figure.panel');
  await page.waitForSelector('.event-log h2:has-text("run ended")');
  await page.screenshot({ path: path.join(images, 'console-run.png') });

  // The rollout browser: the last step's policy rollouts, best first, the first one opened.
  const last = sizes.grpo.steps;
  await page.goto(
    `${stack.url}/console/#/runs/${grpo.id}/rollouts?step=${last}&role=policy&sort=reward&order=desc`,
  );
  await page.waitForSelector('details.rollout');
  await page.click('details.rollout >> nth=0 >> summary');
  await page.waitForSelector('.rollout-body');
  await page.screenshot({ path: path.join(images, 'console-rollouts.png') });
  console.error(`screenshots: docs/images/console-run.png, docs/images/console-rollouts.png`);
} finally {
  await browser.close();
  await stack.close();
  const redis = new Redis(redisUrl);
  await deleteKeysWithPrefix(redis, keyPrefix);
  await redis.quit();
  await rm(work, { recursive: true, force: true });
}
