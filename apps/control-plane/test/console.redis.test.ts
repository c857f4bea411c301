// The web console in a real browser (Debian's chromium through playwright-core) against a real
// control plane on Redis: sign-in and token handling, the runs list and its filters and pages,
// a run page that follows its event stream live, and tenant isolation as a user sees it. The
// serving itself (content types, CSP, 404s) is checked with inject().
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { type EvalItem, type RolloutRecord, rolloutId } from '@anneal/protocol';
import {
  EVAL_ITEMS_FILE,
  acquireFairShare,
  appendStep,
  fairShareLeaseId,
  commitLedgerStep,
  engineArtifactDir,
  writeLedgerStep,
  heartbeatWorker,
  releaseFairShare,
  retireCheckpoint,
  runArtifactDir,
  setCheckpoint,
  startRun,
} from '@anneal/store';
import { CONSOLE_CSP } from '../src/plugins/console.ts';
import { bundledConsole, launchBrowser } from './browser.ts';
import { TOKENS, type TestPlane, eventually, submit, testPlane } from './helpers.ts';

let plane: TestPlane;
let bundle: Awaited<ReturnType<typeof bundledConsole>>;
let browser: Browser;
let base: string;
const acme = { grpo: '', eval: '', sft: [] as string[] };
let betaRun = '';

async function seed(): Promise<void> {
  // 55 sft runs (more than a page of 50), two labelled, and a grpo run with steps.
  for (let i = 0; i < 55; i++) {
    const labels = i < 2 ? '\nlabels: {team: search}' : '';
    const res = await submit(plane.app, `kind: sft\nname: sft-${i}${labels}\n`);
    acme.sft.push(res.json().id);
  }
  acme.grpo = (await submit(plane.app, 'kind: grpo\nname: grpo-live\n')).json().id;
  betaRun = (
    await submit(plane.app, 'kind: sft\nname: beta-secret\n', { token: TOKENS.betaSubmitter })
  ).json().id;
  await heartbeatWorker(plane.store, {
    id: 'w1',
    pool: 'default',
    slots: 1,
    busy: 0,
    runs: [],
    startedAt: new Date().toISOString(),
  });
  expect((await startRun(plane.store, acme.grpo, 'w1')).status).toBe('started');
  for (let step = 1; step <= 12; step++) {
    await appendStep(plane.store, acme.grpo, step, {
      loss: 1 / step,
      grad_norm: 1 + step / 10,
      'reward/all': step / 12,
      train_inference_kl: step * 1e-13,
    });
  }
  await setCheckpoint(plane.store, acme.grpo, { step: 10, path: '/artifacts/ckpt-10' });
  // Its requests on endpoint gen went through its fair share (docs/operations.md "Fair share
  // of an endpoint"): the release script writes its fleetShare on the run.
  const lease = { capacity: 8, runId: acme.grpo, weight: 3, waiterId: 'w', queued: 2 };
  const ask = { ...lease, units: [2], leasePrefix: 'l' };
  expect((await acquireFairShare(plane.store, 'gen', ask)).granted).toBe(1);
  await releaseFairShare(plane.store, 'gen', {
    runId: acme.grpo,
    leaseId: fairShareLeaseId('l', 1),
    tokens: 96,
    waitedMs: 1500,
  });
  for (const step of [11, 12]) await seedLedgerStep(step);
  await seedEval();
}

/** The known rollout the browser test looks for: step 12, group 1, index 1. */
const KNOWN = { id: '12-1-1', query: 'capital of Australia', answer: 'Canberra', reward: 0.9 };

/** A rollout as the GRPO worker records it (@anneal/protocol RolloutRecord). */
function rollout(step: number, group: number, index: number, role: 'policy' | 'reference') {
  const known = rolloutId(role, step, group, index) === KNOWN.id;
  const toolCalls = group === 1 ? 1 + index : 0;
  const record: RolloutRecord = {
    id: rolloutId(role, step, group, index),
    role,
    step,
    group,
    index,
    pairedWith: rolloutId(role === 'policy' ? 'reference' : 'policy', step, group, index),
    policyVersion: role === 'policy' ? step - 1 : null,
    promptId: `search-qa:q${group}`,
    source: 'search-qa',
    exampleId: `q${group}`,
    component: 'qa',
    prompt: { text: `Question ${group}: what is the ${KNOWN.query}?` },
    turns: [
      {
        assistant: `<tool_call>search_web ${KNOWN.query}</tool_call>`,
        calls: Array.from({ length: toolCalls }, (_, c) => ({
          name: 'search_web',
          arguments: { query: `${KNOWN.query} ${c}` },
          status: c === 1 ? 'error' : 'ok',
          failed: c === 1,
          resultCount: c === 1 ? 0 : 3,
          result: c === 1 ? '' : 'Canberra is the capital city of Australia.',
          resultChars: c === 1 ? 0 : 44,
          ...(c === 1 && { error: 'search backend timed out' }),
        })),
      },
      {
        assistant: `<answer>${known ? KNOWN.answer : `Sydney ${step}.${index}`}</answer>`,
        calls: [],
      },
    ],
    answer: known ? KNOWN.answer : `Sydney ${step}.${index}`,
    finish: 'answer',
    truncated: false,
    lengths: { prompt: 24, generated: 20 + index, response: 40 + index, total: 64 + index },
    toolCalls,
    toolErrors: toolCalls > 1 ? 1 : 0,
    rewards:
      role === 'reference'
        ? null
        : {
            baseReward: known ? 1 : 0,
            preferenceScore: 0.9,
            toolPenalty: 0,
            lengthPenalty: 0,
            efficiencyPenalty: 0,
            reward: known ? KNOWN.reward : 0.1 * index,
          },
    advantage: role === 'reference' ? null : known ? 1.2 : -0.4,
    ratio:
      role === 'reference' ? null : { mean: 1.01, min: 0.97, max: 1.04, k3: 1e-5, generated: 20 },
    checks: null,
  };
  return record;
}

/** Step `step` of the GRPO run in the ledger as the worker leaves it once Redis committed it:
 * 3 groups of 2 policy and 2 reference rollouts. */
async function seedLedgerStep(step: number): Promise<void> {
  const runDir = runArtifactDir(plane.artifactDir, acme.grpo);
  const groups = [0, 1, 2].map((g) => [
    rollout(step, g, 0, 'policy'),
    rollout(step, g, 1, 'policy'),
    rollout(step, g, 0, 'reference'),
    rollout(step, g, 1, 'reference'),
  ]);
  await writeLedgerStep(runDir, {
    step,
    attempt: 1,
    policyVersion: step - 1,
    groupSize: 2,
    hasTokens: false,
    sample: [0],
    groups,
  });
  expect(await commitLedgerStep(runDir, step, { attempt: 1, rollbacks: 0 })).toBe('committed');
}

/** An eval run with two committed cells (checkpoint 0 and 1 at b = 2) of three questions. */
async function seedEval(): Promise<void> {
  const res = await submit(
    plane.app,
    'kind: eval\nname: eval-sweep\nendpoints: {trainer: embedded}\n',
  );
  acme.eval = res.json().id;
  expect((await startRun(plane.store, acme.eval, 'w1')).status).toBe('started');
  const item = (step: number, id: string, correct: boolean, answer: string): EvalItem => ({
    step,
    checkpoint: step - 1,
    budget: 2,
    id,
    correct,
    grader: 'verifier',
    answer,
    abstained: false,
    languageMismatch: false,
    toolCalls: correct ? 1 : 3,
    searchCalls: correct ? 1 : 3,
    brokenCalls: 0,
    finish: 'answer',
    promptTokens: 120,
    completionTokens: 30,
    attempt: 1,
  });
  const items = [
    item(1, 'q-capital', true, 'Paris'),
    item(1, 'q-river', false, 'the Rhine'),
    item(1, 'q-moon', true, '1969'),
    item(2, 'q-capital', true, 'Paris'),
    item(2, 'q-river', true, 'the Danube'),
    item(2, 'q-moon', true, '1969'),
  ];
  const dir = runArtifactDir(plane.artifactDir, acme.eval);
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, EVAL_ITEMS_FILE),
    items.map((x) => `${JSON.stringify(x)}\n`).join(''),
  );
  for (const step of [1, 2]) await appendStep(plane.store, acme.eval, step, { n: 3 });
}

beforeAll(async () => {
  bundle = await bundledConsole();
  plane = await testPlane({ consoleDir: bundle.dir });
  base = await plane.app.listen({ host: '127.0.0.1', port: 0 });
  await seed();
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await plane?.cleanup();
  await bundle?.remove();
});

/** A fresh browser context (its own sessionStorage) with CSP violations and page errors kept. */
async function openConsole(): Promise<{ page: Page; context: BrowserContext; problems: string[] }> {
  const context = await browser.newContext();
  // Below the test's own timeout, so a wait that fails says which element it waited for.
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(`${base}/console/`);
  return { page, context, problems };
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.fill('#token', token);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('table.runs');
}

// Code run in the page is passed as strings: this workspace type-checks against Node, not the DOM.
const listedRuns = (page: Page): Promise<string[]> =>
  page.evaluate(
    `[...document.querySelectorAll('table.runs tbody tr')].map((r) => r.getAttribute('data-run'))`,
  );
/** Waits until `expression` is true in the page. Not page.waitForFunction: that evaluates its
 * string inside the page, which the console's CSP (no 'unsafe-eval') refuses. */
const until = (page: Page, expression: string) =>
  eventually(async () => (await page.evaluate(expression)) === true);
const rowCount = (n: number) => `document.querySelectorAll('table.runs tbody tr').length === ${n}`;

describe('serving /console', () => {
  it('redirects /console to /console/ and serves the page with a strict CSP', async () => {
    const redirect = await plane.app.inject({ url: '/console' });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('/console/');
    const page = await plane.app.inject({ url: '/console/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).toContain('<script type="module" src="console.js">');
  });

  it.each([
    ['console.js', 'text/javascript; charset=utf-8'],
    ['console.css', 'text/css; charset=utf-8'],
    ['favicon.svg', 'image/svg+xml'],
    ['catalogue.json', 'application/json; charset=utf-8'],
  ])('serves %s as %s, revalidated by ETag', async (file, type) => {
    const res = await plane.app.inject({ url: `/console/${file}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(type);
    const again = await plane.app.inject({
      url: `/console/${file}`,
      headers: { 'if-none-match': String(res.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
  });

  it('answers an unknown file with a 404 problem', async () => {
    const res = await plane.app.inject({ url: '/console/nope.js' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().code).toBe('ANNEAL_ERR_NOT_FOUND');
  });

  it('lists the run states, kinds and step panels in catalogue.json', async () => {
    const catalogue = (await plane.app.inject({ url: '/console/catalogue.json' })).json();
    expect(catalogue.states).toContain('running');
    expect(catalogue.kinds).toEqual(expect.arrayContaining(['sft', 'rm', 'grpo', 'eval']));
    const kl = catalogue.panels.find((p: { id: string }) => p.id === 'trainInferenceKl');
    expect(kl.lines.map((l: { key: string }) => l.key)).toContain('train_inference_kl');
  });
});

describe('the console in chromium', () => {
  it('refuses a wrong token and keeps the right one in sessionStorage only', async () => {
    const { page, context, problems } = await openConsole();
    await page.fill('#token', 'not-a-token-at-all-0123456789');
    await page.click('form.signin button[type=submit]');
    await page.waitForSelector('form.signin .error');
    expect(await page.textContent('form.signin .error')).toContain('not accepted');

    await signIn(page, TOKENS.acmeViewer);
    const stored: { session: string; local: number; cookie: string; url: string } =
      await page.evaluate(`({
        session: sessionStorage.getItem('anneal.token'),
        local: localStorage.length,
        cookie: document.cookie,
        url: location.href,
      })`);
    expect(stored.session).toBe(TOKENS.acmeViewer);
    expect(stored.local).toBe(0);
    expect(stored.cookie).toBe('');
    expect(stored.url).not.toContain(TOKENS.acmeViewer);
    expect(await context.cookies()).toEqual([]);

    // A new tab of the same browser session has no token: sessionStorage is per tab.
    const other = await context.newPage();
    await other.goto(`${base}/console/`);
    await other.waitForSelector('form.signin');

    await page.click('#sign-out');
    await page.waitForSelector('form.signin');
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
    await context.close();
  });

  it('lists runs newest first a page at a time, and filters by state, kind and label', async () => {
    const { page, context, problems } = await openConsole();
    await signIn(page, TOKENS.acmeViewer);
    const first = await listedRuns(page);
    expect(first).toHaveLength(50);
    expect(first.slice(0, 3)).toEqual([acme.eval, acme.grpo, acme.sft.at(-1)]);
    await page.click('nav.pager a[rel=next]');
    await until(
      page,
      `document.querySelector('table.runs tbody tr')?.getAttribute('data-run') === '${acme.sft[6]}'`,
    );
    expect(await listedRuns(page)).toEqual(acme.sft.slice(0, 7).reverse());

    await page.goto(`${base}/console/#/runs`);
    await page.selectOption('#filter-state', 'running');
    await page.click('form.filters button[type=submit]');
    await until(page, rowCount(2));
    expect(await listedRuns(page)).toEqual([acme.eval, acme.grpo]);

    await page.selectOption('#filter-kind', 'grpo');
    await page.click('form.filters button[type=submit]');
    await until(page, rowCount(1));
    expect(await listedRuns(page)).toEqual([acme.grpo]);

    await page.selectOption('#filter-state', '');
    await page.selectOption('#filter-kind', '');
    await page.fill('#filter-label', 'team=search');
    await page.click('form.filters button[type=submit]');
    await until(page, rowCount(2));
    expect(await listedRuns(page)).toEqual([acme.sft[1], acme.sft[0]]);
    expect(page.url()).toContain('label=team%3Dsearch');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('opens a run: its facts, curves, checkpoints, and steps committed while it is open', async () => {
    const { page, context, problems } = await openConsole();
    await signIn(page, TOKENS.acmeViewer);
    await page.click(`a[href="#/runs/${acme.grpo}"]`);
    await page.waitForSelector('figure.panel[data-panel="Loss"]');
    expect(await page.textContent('.summary h1')).toContain('grpo-live');
    expect(await page.textContent('.checkpoints')).toContain('/artifacts/ckpt-10');
    expect(await page.textContent('.summary dl.facts')).toContain(
      'share of gen100.0 % of the tokens (weight 3; 1 request, 96 tokens, waited 1.5 s)',
    );
    // GET …/usage: what it consumed and cost, its items in a table.
    await page.waitForSelector('.usage table');
    expect(await page.textContent('.usage h2')).toMatch(/^Usage \$\d/);
    expect(await page.textContent('.curves h2')).toContain('12 steps');
    // The KL panel of the recipe's metrics, drawn as a line over the 12 steps.
    const kl = page.locator('figure.panel[data-panel="Train–inference KL"] polyline');
    expect(await kl.count()).toBe(1);
    // Hovering a chart's left edge shows step 1's value (loss 1/1) in its legend.
    await page.hover('figure.panel[data-panel="Loss"] svg', { position: { x: 3, y: 40 } });
    // (The latest, step 12, is 0.0833.)
    expect(await page.textContent('figure.panel[data-panel="Loss"] .legend')).toBe('loss 1step 1');
    await page.mouse.move(0, 0);
    await page.waitForSelector('.event-log h2:has-text("live")');

    await appendStep(plane.store, acme.grpo, 13, { loss: 0.05, grad_norm: 2, 'reward/all': 1 });
    // Its sampler export where the embedded trainer writes one, so the console can export it.
    const exportDir = path.join(
      engineArtifactDir(plane.artifactDir, 'embedded'),
      'm-console',
      'sampler_weights',
      'step-13-sampler',
    );
    await mkdir(exportDir, { recursive: true });
    await writeFile(path.join(exportDir, 'model.onnx'), 'onnx bytes of step 13');
    await setCheckpoint(plane.store, acme.grpo, {
      step: 13,
      path: '/artifacts/ckpt-13',
      samplerPath: 'tinker://m-console/step-13-sampler',
    });
    await until(page, `document.querySelector('.curves h2')?.textContent?.includes('13 steps')`);
    await page.waitForSelector('.checkpoints td.path:has-text("/artifacts/ckpt-13")');
    // The catalogue (GET …/checkpoints): the new one is the resume point, the old one kept.
    expect(await page.textContent('.checkpoints tr[data-step="13"]')).toContain('latest');
    expect(await page.textContent('.checkpoints tr[data-step="10"]')).not.toContain('latest');
    // Export: fetched with the token, saved as the tar the API streams (manifest + model).
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('.checkpoints tr[data-step="13"] button:has-text("export")'),
    ]);
    expect(download.suggestedFilename()).toBe(`${acme.grpo}-step-13.tar`);
    const tar = await readFile((await download.path())!, 'latin1');
    expect(tar).toContain('manifest.json');
    expect(tar).toContain('onnx bytes of step 13');
    expect(await page.textContent('li[data-type="step:committed"]')).toContain('step 13');
    expect(await page.textContent('figure.panel[data-panel="Loss"] .legend')).toContain('0.05');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('filters a GRPO run’s rollouts to a known one, opens it, and follows its prompt across steps', async () => {
    const { page, context, problems } = await openConsole();
    await signIn(page, TOKENS.acmeViewer);
    await page.click(`a[href="#/runs/${acme.grpo}"]`);
    await page.click('a.button:has-text("Browse rollouts")');
    await page.waitForSelector('details.rollout');
    // 2 steps × 3 groups × (2 policy + 2 reference).
    expect(await page.locator('details.rollout').count()).toBe(24);
    await page.fill('#f-step', '12');
    await page.selectOption('#f-role', 'policy');
    await page.selectOption('#f-hasToolErrors', 'true');
    await page.fill('#f-minReward', '0.5');
    await page.click('form.filters button[type=submit]');
    await until(page, `document.querySelectorAll('details.rollout').length === 1`);
    const found = page.locator(`details.rollout[data-rollout="${KNOWN.id}"]`);
    expect(await found.count()).toBe(1);
    await found.locator('summary').click();
    await page.waitForSelector('.rollout-body');
    const body = await page.textContent('.rollout-body');
    expect(body).toContain(`search_web("${KNOWN.query} 0")`);
    expect(body).toContain('search backend timed out');
    expect(body).toContain(KNOWN.answer);
    expect(body).toContain(String(KNOWN.reward));
    await page.click('.rollout-body a:has-text("This prompt across steps")');
    await page.waitForSelector('table.across');
    const steps = await page
      .locator('table.across tbody tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-step')));
    expect(steps).toEqual(['11', '12']);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('browses an eval run’s answers: a wrong one by filter, then that question in every cell', async () => {
    const { page, context, problems } = await openConsole();
    await signIn(page, TOKENS.acmeViewer);
    await page.click(`a[href="#/runs/${acme.eval}"]`);
    // The results chart is fetched with the token and shown through a blob: URL (CSP img-src).
    await until(
      page,
      `document.querySelector('img.eval-chart')?.complete && document.querySelector('img.eval-chart').naturalWidth > 0`,
    );
    await page.click('a.button:has-text("Browse answers")');
    await page.waitForSelector('table.items');
    await page.selectOption('#f-correct', 'false');
    await page.click('form.filters button[type=submit]');
    await until(page, `document.querySelectorAll('table.items tbody tr').length === 1`);
    expect(await page.textContent('table.items tbody')).toContain('the Rhine');
    await page.click('table.items a:has-text("q-river")');
    await until(page, `document.querySelectorAll('table.items tbody tr').length === 2`);
    const answers = await page.locator('table.items td.answer').allTextContents();
    expect(answers).toEqual(['the Rhine', 'the Danube']);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('shows a tenant only its own runs, and another tenant’s run as not found', async () => {
    const { page, context } = await openConsole();
    await signIn(page, TOKENS.betaSubmitter);
    expect(await listedRuns(page)).toEqual([betaRun]);
    await page.goto(`${base}/console/#/runs/${acme.grpo}`);
    await page.waitForSelector('main .error');
    expect(await page.textContent('main .error')).toContain(`no run '${acme.grpo}' in this tenant`);
    expect(await page.textContent('main')).not.toContain('grpo-live');
    // Nor its rollouts: the rollout browser shows the API's 404, not a record.
    await page.goto(`${base}/console/#/runs/${acme.grpo}/rollouts`);
    await page.waitForSelector('main .error');
    expect(await page.locator('details.rollout').count()).toBe(0);
    expect(await page.textContent('main')).not.toContain(KNOWN.answer);

    await page.click('#sign-out');
    await signIn(page, TOKENS.acmeViewer);
    const acmeList = await listedRuns(page);
    expect(acmeList).not.toContain(betaRun);
    await page.goto(`${base}/console/#/runs/${betaRun}`);
    await page.waitForSelector('main .error');
    expect(await page.textContent('main')).not.toContain('beta-secret');
    await context.close();
  });

  it('says a link with a malformed % is broken, instead of a blank page, and goes on', async () => {
    const { page, context, problems } = await openConsole();
    await signIn(page, TOKENS.acmeViewer);
    await page.goto(`${base}/console/#/runs/run_%E0%A4%A/rollouts`);
    await page.waitForSelector('main .error');
    expect(await page.textContent('main .error')).toContain(
      "this link is malformed: 'run_%E0%A4%A' is not valid percent-encoding",
    );
    expect(problems.filter((p) => p.startsWith('pageerror'))).toEqual([]);
    // The page still follows links.
    await page.click('#crumbs a:has-text("Runs")');
    await page.waitForSelector('table.runs');
    await context.close();
  });

  it('pauses and resumes a run with a submitter token; a viewer token is refused', async () => {
    const id = acme.sft[10]!;
    const { page, context } = await openConsole();
    await signIn(page, TOKENS.acmeViewer);
    await page.goto(`${base}/console/#/runs/${id}`);
    await page.click('.actions button:has-text("Pause")');
    await page.waitForSelector('.actions .error');
    expect(await page.textContent('.actions .error')).toContain("needs role 'submitter'");

    await page.click('#sign-out');
    await signIn(page, TOKENS.acmeSubmitter);
    await page.goto(`${base}/console/#/runs/${id}`);
    await page.click('.actions button:has-text("Pause")');
    // Queued: paused at once; the page follows the run:state event.
    await page.waitForSelector('.summary .state-paused');
    expect(await page.textContent('.summary')).toContain('by user');
    await page.click('.actions button:has-text("Resume")');
    await page.waitForSelector('.summary .state-queued');
    expect(await page.textContent('.transitions')).toContain('paused');
    await context.close();
  });

  it('reads a long catalogue a page at a time: the newest 50, older on request, a new one alone', async () => {
    const id = acme.sft[30]!;
    for (let step = 1; step <= 60; step++) {
      await appendStep(plane.store, id, step, { loss: 1 / step });
      await setCheckpoint(plane.store, id, { step, path: `/artifacts/long-${step}` });
    }
    for (let step = 1; step <= 5; step++) {
      expect((await retireCheckpoint(plane.store, id, step)).status).toBe('retired');
    }
    const { page, context, problems } = await openConsole();
    const catalogueReads: string[] = [];
    page.on('request', (request) => {
      if (/\/checkpoints($|\?)/.test(request.url())) catalogueReads.push(request.url());
    });
    await signIn(page, TOKENS.acmeViewer);
    await page.goto(`${base}/console/#/runs/${id}`);
    await page.waitForSelector('.checkpoints tr[data-step="60"]');
    const shown = `document.querySelectorAll('.checkpoints tbody tr').length`;
    expect(await page.evaluate(shown)).toBe(50);
    expect(await page.textContent('.checkpoints .catalogue-summary')).toBe(
      '55 kept · 5 deleted by retention (steps 1–5)',
    );
    expect(await page.locator('.checkpoints tr[data-step="10"]').count()).toBe(0);
    await page.click('.checkpoints button.older');
    await until(page, `${shown} === 55`);
    expect(await page.locator('.checkpoints button.older').count()).toBe(0);
    expect(await page.locator('.checkpoints tr[data-step="5"]').count()).toBe(0);
    // A new checkpoint: the newest page is read again (one page), the older rows stay.
    await page.waitForSelector('.event-log h2:has-text("live")');
    await appendStep(plane.store, id, 61, { loss: 0.01 });
    await setCheckpoint(plane.store, id, { step: 61, path: '/artifacts/long-61' });
    await page.waitForSelector('.checkpoints tr[data-step="61"]');
    await until(page, `${shown} === 56`);
    expect(await page.textContent('.checkpoints tr[data-step="61"]')).toContain('latest');
    expect(await page.textContent('.checkpoints tr[data-step="60"]')).not.toContain('latest');
    // Every read is one page (the replayed checkpoint events coalesce into a few re-reads).
    expect(catalogueReads.length).toBeGreaterThanOrEqual(3);
    for (const url of catalogueReads) expect(new URL(url).searchParams.get('limit')).toBe('50');
    expect(problems).toEqual([]);
    await context.close();
  });
});
