// A tenant cap is a ceiling under concurrency (docs/usage.md "Budgets"): many queued runs, a
// small day cap, real Redis and real workers (two in-process workers of two slots, the counting
// executor: every step trains 10 tokens, priced $1). Once the cap is reached no queued run starts
// (the start script refuses it; it waits `paused` by `budget`), and each running run commits at
// most the one step it had under way: spend ≤ cap + (runs running) × one step. The old code
// started every queued run after the cap and each spent a step. `npm test` queues 12 runs;
// ANNEAL_SOAK=1 (`npm run soak`) 16 and 40.
import { afterEach, describe, expect, it } from 'vitest';
import { usagePeriods } from '@anneal/protocol';
import { getRun, getTransitions, readSteps, readTenantUsage, setTenantBudget } from '@anneal/store';
import { localWorkerOperatorConfig } from '../src/config.ts';
import { type TestEnv, eventually, sftSpec, testEnv } from './helpers.ts';

const SOAK = process.env.ANNEAL_SOAK === '1';
const QUEUED = SOAK ? [16, 40] : [12];
const WORKERS = 2;
const SLOTS = 2;
const CAP_USD = 5;
/** $ per step: 10 trained tokens at $100,000 per million. */
const STEP_USD = 1;

let env: TestEnv | undefined;
afterEach(async () => {
  await env?.cleanup();
  env = undefined;
});

describe('tenant budget under concurrency', () => {
  for (const queued of QUEUED) {
    it(`${queued} queued runs, a $${CAP_USD} day cap, ${WORKERS * SLOTS} slots: spend passes the cap by at most one step per running run`, async () => {
      const operator = localWorkerOperatorConfig('default', SLOTS);
      env = await testEnv({
        ...operator,
        prices: { ...operator.prices, trainedPerMillionTokens: 100_000 },
      });
      const e = env;
      await setTenantBudget(e.store, 'default', { maxUsd: CAP_USD, period: 'day' });
      const ids: string[] = [];
      for (let i = 0; i < queued; i++) {
        ids.push(
          await e.submit(sftSpec({ steps: 8, interval: 1, stepMs: 150, trainedTokens: 10 })),
        );
      }
      for (let w = 0; w < WORKERS; w++) await e.startWorker({ slots: SLOTS });
      const settled = new Set(['paused', 'succeeded', 'failed', 'cancelled']);
      await eventually(
        async () => {
          const runs = await Promise.all(ids.map((id) => getRun(e.store, id)));
          return runs.every((run) => run !== null && settled.has(run.state));
        },
        240_000,
        'every run paused or ended',
      );
      const day = usagePeriods(new Date()).day;
      const spent = (await readTenantUsage(e.store, 'default', day)).costUsd.total;
      const steps = await Promise.all(ids.map((id) => readSteps(e.store, id)));
      const started = await Promise.all(
        ids.map(async (id) => (await getTransitions(e.store, id)).some((t) => t.to === 'running')),
      );
      const overshoot = spent - CAP_USD;
      console.log(
        `budget overshoot, ${queued} queued runs, ${WORKERS * SLOTS} slots: spent $${spent.toFixed(2)} ` +
          `of $${CAP_USD.toFixed(2)} (+$${overshoot.toFixed(2)}, ${((overshoot / CAP_USD) * 100).toFixed(0)} %); ` +
          `${started.filter(Boolean).length} runs started, ${steps.flat().length} steps`,
      );
      expect(spent).toBeGreaterThanOrEqual(CAP_USD);
      // At most one step of each run running when the cap was reached (never more than the slots).
      expect(overshoot).toBeLessThanOrEqual(WORKERS * SLOTS * STEP_USD + 1e-9);
      // Runs that had not started when the cap was reached never did, and wait paused by budget.
      const neverStarted = ids.filter((_, i) => !started[i]);
      expect(neverStarted.length).toBeGreaterThanOrEqual(queued - WORKERS * SLOTS * 2);
      for (const id of neverStarted) {
        const transitions = await getTransitions(e.store, id);
        expect(transitions.map((t) => t.to)).toEqual(['queued', 'paused']);
        expect(transitions[1]).toMatchObject({
          by: 'budget',
          reason: expect.stringMatching(
            /is at its budget: spent .* the run waits paused, not started/,
          ),
        });
      }
    }, 300_000);
  }
});
