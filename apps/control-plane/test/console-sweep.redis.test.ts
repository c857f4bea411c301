// The console's sweep page and run comparison in a real browser (Debian's chromium through
// playwright-core) against a real control plane on Redis: a sweep of 4 GRPO runs with committed
// steps shows its runs in each state, the best run by its metric, and every run's step curves
// overlaid with its grid values (the differing spec fields) as the legend; runs ticked on the
// runs list open side by side; one prompt across the sweep's runs in the rollout browser; a
// sweep of another tenant is not found.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { type RolloutRecord, type SweepResource, rolloutId } from '@anneal/protocol';
import {
  appendStep,
  commitLedgerStep,
  heartbeatWorker,
  runArtifactDir,
  startRun,
  transitionRun,
  writeLedgerStep,
} from '@anneal/store';
import { bundledConsole, launchBrowser } from './browser.ts';
import { TOKENS, type TestPlane, auth, eventually, testPlane } from './helpers.ts';

let plane: TestPlane;
let bundle: Awaited<ReturnType<typeof bundledConsole>>;
let browser: Browser;
let base: string;
let sweep: SweepResource;

const SWEEP = `kind: sweep
name: lr-by-len
base: { kind: grpo, steps: 6 }
grid:
  optimizer.learningRate: [1.0e-5, 3.0e-5]
  reward.lambdaLen: [0, 0.2]
select: { metric: loss, mode: min }
`;

const PROMPT = 'search-qa:q0';

/** A policy rollout of group 0 of `PROMPT` with reward `reward` (the ledger's record shape). */
function rollout(step: number, index: number, reward: number): RolloutRecord {
  return {
    id: rolloutId('policy', step, 0, index),
    role: 'policy',
    step,
    group: 0,
    index,
    pairedWith: rolloutId('reference', step, 0, index),
    policyVersion: step - 1,
    promptId: PROMPT,
    source: 'search-qa',
    exampleId: 'q0',
    component: 'qa',
    prompt: { text: 'What is the capital of Australia?' },
    turns: [{ assistant: `<answer>answer ${reward}</answer>`, calls: [] }],
    answer: `answer ${reward}`,
    finish: 'answer',
    truncated: false,
    lengths: { prompt: 10, generated: 8, response: 8, total: 18 },
    toolCalls: 0,
    toolErrors: 0,
    rewards: {
      baseReward: reward,
      preferenceScore: 1,
      toolPenalty: 0,
      lengthPenalty: 0,
      efficiencyPenalty: 0,
      reward,
    },
    advantage: 0,
    ratio: null,
    checks: null,
  };
}

/** Runs 1 and 2 of the sweep record `PROMPT` at steps 1 and 2: mean R = run + step / 10. */
async function seedLedgers(): Promise<void> {
  for (const [i, run] of sweep.runs.slice(0, 2).entries()) {
    const dir = runArtifactDir(plane.artifactDir, run.id);
    for (const step of [1, 2]) {
      const mean = i + 1 + step / 10;
      await writeLedgerStep(dir, {
        step,
        attempt: 1,
        policyVersion: step - 1,
        groupSize: 2,
        hasTokens: false,
        sample: [0],
        groups: [[rollout(step, 0, mean - 0.05), rollout(step, 1, mean + 0.05)]],
      });
      expect(await commitLedgerStep(dir, step, { attempt: 1, rollbacks: 0 })).toBe('committed');
    }
  }
}

/** Each run commits 6 steps (loss falling faster with a higher learning rate) and succeeds,
 * except the last, left running at step 3. */
async function seed(): Promise<void> {
  const res = await plane.app.inject({
    method: 'POST',
    url: '/v1/sweeps',
    headers: { ...auth(TOKENS.acmeSubmitter), 'content-type': 'application/yaml' },
    payload: SWEEP,
  });
  expect(res.statusCode, res.body).toBe(201);
  sweep = res.json<SweepResource>();
  // A live worker: its runs are not taken for lost (and retried) while the test looks at them.
  await heartbeatWorker(
    plane.store,
    { id: 'w1', pool: 'default', slots: 4, busy: 1, runs: [], startedAt: new Date().toISOString() },
    3600,
  );
  for (const [i, run] of sweep.runs.entries()) {
    const started = await startRun(plane.store, run.id, 'w1');
    if (started.status !== 'started') throw new Error(`start ${run.id}: ${started.status}`);
    const rate = 0.2 + 0.1 * i;
    const steps = i === 3 ? 3 : 6;
    for (let step = 1; step <= steps; step++) {
      const metrics = { loss: Math.exp(-rate * step), grad_norm: 1 + step / 10 };
      await appendStep(plane.store, run.id, step, metrics, { attempt: started.attempt });
    }
    if (i < 3) {
      const done = await transitionRun(plane.store, run.id, {
        to: 'succeeded',
        from: ['running'],
        reason: 'done',
      });
      expect(done.status).toBe('ok');
    }
  }
}

beforeAll(async () => {
  bundle = await bundledConsole();
  plane = await testPlane({ consoleDir: bundle.dir });
  base = await plane.app.listen({ host: '127.0.0.1', port: 0 });
  await seed();
  await seedLedgers();
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await plane?.cleanup();
  await bundle?.remove();
});

async function signedIn(token: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(`${base}/console/`);
  await page.fill('#token', token);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('.runs-body table.runs, .runs-body p.empty');
  return { page, problems };
}

/** Waits until `expression` is true in the page (not waitForFunction: the CSP has no eval). */
const until = (page: Page, expression: string) =>
  eventually(async () => (await page.evaluate(expression)) === true);

describe('console sweep page', () => {
  it("overlays the sweep's step curves with its grid values as the legend", async () => {
    const { page, problems } = await signedIn(TOKENS.acmeViewer);
    await page.goto(`${base}/console/#/sweeps/${sweep.id}`);
    await page.waitForSelector('.compare-panels figure.panel[data-panel="Loss"]');
    const facts = await page.locator('.summary dl.facts').textContent();
    expect(facts).toContain('4 grpo: 1 running, 3 succeeded');
    // The best loss at each run's latest step: run 3 (rate 0.4 over 6 steps).
    expect(await page.locator('.summary .best a').textContent()).toBe(sweep.runs[2]!.id);

    const rows = page.locator('table.compare tbody tr');
    expect(await rows.count()).toBe(4);
    expect(await page.locator('table.compare thead th').allTextContents()).toEqual([
      '',
      'run',
      'state',
      'step',
      'optimizer.learningRate',
      'reward.lambdaLen',
    ]);
    expect(await rows.nth(3).locator('td').allTextContents()).toEqual([
      '■',
      'lr-by-len #4',
      'running',
      '3',
      '3.00e-5',
      '0.2',
    ]);

    const loss = page.locator('figure.panel[data-panel="Loss"]');
    expect(await loss.locator('polyline.line').count()).toBe(4);
    const legend = await loss.locator('ul.legend li').allTextContents();
    expect(legend).toHaveLength(4);
    expect(legend[1]).toMatch(/^optimizer\.learningRate=1\.00e-5 · reward\.lambdaLen=0\.2 /);
    expect(legend[2]).toMatch(/^optimizer\.learningRate=3\.00e-5 · reward\.lambdaLen=0 /);
    expect(problems).toEqual([]);
  });

  it('opens runs ticked on the runs list side by side, and follows a sweep label to its sweep', async () => {
    const { page, problems } = await signedIn(TOKENS.acmeViewer);
    const [a, b] = [sweep.runs[0]!.id, sweep.runs[3]!.id];
    await page.check(`tr[data-run="${a}"] input[name=compare]`);
    await page.check(`tr[data-run="${b}"] input[name=compare]`);
    await page.click('button.compare-selected');
    await until(page, `location.hash.startsWith('#/compare?')`);
    await page.waitForSelector('.compare-panels figure.panel');
    const shown = await page.evaluate(
      `[...document.querySelectorAll('table.compare tbody tr')].map((r) => r.getAttribute('data-run'))`,
    );
    expect(new Set(shown as string[])).toEqual(new Set([a, b]));
    // Runs 1 and 4 differ in both grid fields.
    expect(await page.locator('table.compare thead th').count()).toBe(6);

    await page.goto(`${base}/console/#/runs`);
    await page.click(`tr[data-run="${a}"] a.chip`);
    await page.waitForSelector('.compare-panels figure.panel');
    expect(await page.evaluate('location.hash')).toBe(`#/sweeps/${sweep.id}`);
    expect(problems).toEqual([]);
  });

  it("follows one prompt across the sweep's runs in the rollout browser", async () => {
    const { page, problems } = await signedIn(TOKENS.acmeViewer);
    const [a, b] = [sweep.runs[0]!.id, sweep.runs[1]!.id];
    await page.goto(`${base}/console/#/runs/${a}/rollouts?prompt=${PROMPT}`);
    await page.waitForSelector('table.across');
    await page.click('a:has-text("Across its sweep’s 4 runs")');
    await page.waitForSelector('table.across-runs');
    expect(await page.locator('table.across-runs thead th').allTextContents()).toEqual([
      'step',
      ...sweep.runs.map((r) => `mean R · ${r.id}`),
    ]);
    const cells = () =>
      page
        .locator('table.across-runs tbody tr')
        .evaluateAll((rows) =>
          rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)),
        );
    // Runs 3 and 4 have no ledger: their columns are empty.
    expect(await cells()).toEqual([
      ['1', '1.1', '2.1', '–', '–'],
      ['2', '1.2', '2.2', '–', '–'],
    ]);

    // Runs typed in: the same table for just those (the run itself first).
    await page.fill('#f-with', ` ${b} , ${a}`);
    await page.click('form.across-runs button[type=submit]');
    await until(page, `document.querySelectorAll('table.across-runs thead th').length === 3`);
    expect(await cells()).toEqual([
      ['1', '1.1', '2.1'],
      ['2', '1.2', '2.2'],
    ]);
    expect(problems).toEqual([]);
  });

  it("answers another tenant's sweep as not found", async () => {
    const { page } = await signedIn(TOKENS.betaSubmitter);
    await page.goto(`${base}/console/#/sweeps/${sweep.id}`);
    await page.waitForSelector('p.error');
    expect(await page.locator('p.error').textContent()).toContain(`no sweep '${sweep.id}'`);
  });
});
