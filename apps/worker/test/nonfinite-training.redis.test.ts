// NaN/Inf from the trainer, at the worker level with the real SFT executor on the embedded
// trainer: the trainer's model turns non-finite (NaN logprobs, so a NaN loss; or an infinite
// gradient norm) at the 3rd optimizer step. A step with a non-finite metric is never recorded
// (no half-written record). With the default guardrails (docs/guardrails.md "Defaults") the run
// rolls back to its last clean checkpoint and goes on; a fault that persists fails it after
// maxRollbacks with the rule and the values. With the guardrails off the attempt fails naming
// the metric and the run retries from its last checkpoint — a passing fault is survived, one
// that persists fails the run after the bounded attempts (JOB_CATALOGUE.run: 3), never a hang.
import type { TrainerModel } from '@anneal/engines';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, getTransitions, readEvents, readSteps } from '@anneal/store';
import type { EmbeddedEngines } from '../src/index.ts';
import { defaultEmbeddedEngines } from '../src/resources/embedded.ts';
import { type TestEnv, eventually, testEnv } from './helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

type Fault = 'loss' | 'grad-norm';

/** The embedded engines, with the trainer's model turning non-finite at optimizer call `at`
 * (counted over every model the engines create, so across attempts), for one call or for all
 * calls from then on (`persistent`). */
function faultyEngines(fault: Fault, at: number, persistent: boolean): EmbeddedEngines {
  const base = defaultEmbeddedEngines({ trainerDirs: [] });
  let calls = 0;
  const faulty = () => (persistent ? calls >= at : calls === at);
  const wrap = (model: TrainerModel): TrainerModel => {
    // Every other method delegates bound to the real model (its request sequence lives there).
    const delegated = Object.fromEntries(
      ['forward', 'saveWeights', 'loadWeights', 'saveWeightsForSampler', 'deleteSamplerWeights']
        .filter((name) => typeof (model as unknown as Record<string, unknown>)[name] === 'function')
        .map((name) => [
          name,
          (model as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!.bind(model),
        ]),
    );
    return Object.assign(Object.create(model) as TrainerModel, delegated, {
      forwardBackward: async (...args: Parameters<TrainerModel['forwardBackward']>) => {
        const result = await model.forwardBackward(...args);
        calls += 1; // one forward_backward per optimizer step in SFT
        if (fault !== 'loss' || !faulty()) return result;
        return {
          ...result,
          logprobs: result.logprobs.map((l) => new Float32Array(l.length).fill(NaN)),
        };
      },
      optimStep: async (...args: Parameters<TrainerModel['optimStep']>) => {
        const result = await model.optimStep(...args);
        return fault === 'grad-norm' && faulty() ? { ...result, gradNorm: Infinity } : result;
      },
    });
  };
  return {
    ...base,
    async trainer(options) {
      const trainer = await base.trainer(options);
      return {
        capabilities: trainer.capabilities,
        createModel: async (o) => wrap(await trainer.createModel(o)),
        close: () => trainer.close(),
      };
    },
  };
}

const SPEC = 'kind: sft\nsteps: 6\nbatchSize: 2\ncheckpointInterval: 2';
const UNGUARDED = `${SPEC}\nguardrails: { defaults: false }`;
const AT = 3;

async function runWith(engines: EmbeddedEngines, spec = UNGUARDED) {
  await env.startWorker({}, { executors: undefined, factories: { embedded: engines } });
  const runId = await env.submit(spec);
  const run = await eventually(
    async () => {
      const r = await getRun(env.store, runId);
      return r?.state === 'failed' || r?.state === 'succeeded' ? r : null;
    },
    150_000,
    'the run ended',
  );
  const transitions = await getTransitions(env.store, runId);
  const steps = await readSteps(env.store, runId);
  const committed = (await readEvents(env.store, runId, '0', 10_000))
    .filter((e) => e.event.type === 'step:committed')
    .map((e) => (e.event as { step: number }).step);
  for (const { metrics } of steps) {
    for (const v of Object.values(metrics)) expect(Number.isFinite(v)).toBe(true);
  }
  expect(committed).toEqual(steps.map((s) => s.step)); // every record once, as an event too
  return { run, transitions, steps: steps.map((s) => s.step) };
}

describe('non-finite values from the trainer, default guardrails', () => {
  it('an infinite grad norm at one step: the default rule rolls back to the checkpoint, the run succeeds', async () => {
    const { run, transitions, steps } = await runWith(faultyEngines('grad-norm', AT, false), SPEC);
    expect(run.state).toBe('succeeded');
    expect(run.attempt).toBe(1); // no retry: the rollback kept the attempt
    expect(run.guardrails?.rollbacks).toBe(1);
    expect(run.guardrails?.firings[0]).toMatchObject({
      step: 3,
      rule: { name: 'nonfinite-grad-norm', origin: 'operator' },
      values: [{ step: 3, value: 'Infinity' }],
      restored: { step: 2 },
    });
    expect(transitions.map((t) => t.to)).toEqual(['queued', 'running', 'running', 'succeeded']);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6]);
  }, 180_000);

  it('a NaN loss that persists fails the run after maxRollbacks, naming the rule and the value', async () => {
    const { run, transitions, steps } = await runWith(faultyEngines('loss', AT, true), SPEC);
    expect(run.state).toBe('failed');
    expect(run.attempt).toBe(1); // a guardrail stop is final: no retry would pass it
    expect(run.guardrails?.rollbacks).toBe(3);
    expect(transitions.at(-1)?.reason).toMatch(
      /guardrail 'nonfinite-loss' \(loss not finite\) fired at step 3: NaN at 3; stopping the run: the run has taken its 3 rollback\(s\)/,
    );
    expect(run.guardrails?.firings.map((f) => f.action)).toEqual([
      'rollback',
      'rollback',
      'rollback',
      'stop',
    ]);
    expect(steps).toEqual([1, 2]);
  }, 180_000);
});

describe('non-finite values from the trainer, guardrails off', () => {
  it('a NaN loss that persists fails the run after the bounded attempts, naming the metric', async () => {
    const { run, transitions, steps } = await runWith(faultyEngines('loss', AT, true));
    expect(run.state).toBe('failed');
    expect(run.attempt).toBe(3);
    expect(transitions.at(-1)?.reason).toMatch(
      /failed after 3 attempt\(s\): .*metrics\/loss is NaN \(not finite\)/,
    );
    expect(steps).toEqual([1, 2]); // the checkpointed steps; step 3 never recorded
  }, 180_000);

  it('an infinite grad norm at one step: that attempt fails, the retry from the checkpoint succeeds', async () => {
    const { run, transitions, steps } = await runWith(faultyEngines('grad-norm', AT, false));
    expect(run.state).toBe('succeeded');
    const retries = transitions.filter((t) => t.to === 'retrying');
    expect(retries).toHaveLength(1);
    expect(retries[0]?.reason).toMatch(/attempt 1\/3 failed: commitStep\(3\): metrics\/grad_norm/);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6]);
  }, 180_000);
});
