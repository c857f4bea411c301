// A guardrail rollback on the embedded engines (docs/guardrails.md "Rollback"): the real worker,
// the real grpo executor, real Redis and onnxruntime-node; the trainer diverges after its 6th
// optimizer step at the full learning rate (fixtures/kl-fault.ts), so the train–inference KL of
// steps 7 and 8 blows up. The rule `kl-blowup` (KL > 0.5 for 2 steps -> rollback, learning rate
// ×0.5) fires at step 8: the run goes back to the checkpoint of step 6 (the last one at which no
// rule held), re-runs steps 7-10 on fresh batches at half the rate and succeeds. Steps 7 and 8
// of the first generation are kept as rolled back; every step is committed once per generation.
// Then notify, pause and stop on a plain SFT run.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  getRun,
  getTransitions,
  ledgerDir,
  listLedgerSteps,
  readEvents,
  readLedgerIndex,
  readRolledBackSteps,
  readRunUsage,
  readSteps,
  runArtifactDir,
  stepDir,
} from '@anneal/store';
import { defaultEmbeddedEngines } from '../src/resources/embedded.ts';
import { embeddedTrainerDirs } from '../src/resources/resolve.ts';
import type { WorkerConfig } from '../src/config.ts';
import { GUARDED_GRPO, KL_FAULT, LEARNING_RATE, klFaultEngines } from './fixtures/kl-fault.ts';
import { type TestEnv, eventually, testEnv } from './helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

describe('guardrail rollback (grpo, embedded engines)', () => {
  it('a KL blow-up rolls the run back to the last clean checkpoint; it finishes, every step once', async () => {
    const dirs = embeddedTrainerDirs(env as unknown as WorkerConfig);
    const fault = klFaultEngines(dirs, KL_FAULT);
    await env.startWorker({}, { executors: undefined, factories: { embedded: fault.engines } });
    const runId = await env.submit(GUARDED_GRPO);
    let seen = '';
    const run = await eventually(
      async () => {
        const r = await getRun(env.store, runId);
        seen = JSON.stringify({
          state: r?.state,
          lastStep: r?.lastStep,
          guardrails: r?.guardrails,
        });
        return r?.state === 'failed' || r?.state === 'succeeded' ? r : null;
      },
      120_000,
      'the run ended',
      { detail: () => seen },
    );
    expect(run.error).toBeUndefined();
    expect(run.state).toBe('succeeded');
    expect(fault.diverged()).toBe(true);

    // the history: steps 1-10 once each; 7-10 re-run as generation 1 at half the learning rate
    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => [s.step, s.rollbacks ?? 0])).toEqual([
      ...[1, 2, 3, 4, 5, 6].map((s) => [s, 0]),
      ...[7, 8, 9, 10].map((s) => [s, 1]),
    ]);
    for (const s of steps.slice(6)) {
      expect(s.metrics['learning_rate']).toBeCloseTo(LEARNING_RATE / 2, 12);
      expect(s.metrics['train_inference_kl']).toBeLessThan(0.5);
    }
    // the taken-back steps are kept and marked: 7 (committed, then rolled back) and 8 (fired)
    const back = await readRolledBackSteps(env.store, runId);
    expect(back.map((s) => [s.step, s.rolledBack.fired])).toEqual([
      [7, false],
      [8, true],
    ]);
    for (const s of back) expect(s.metrics['train_inference_kl']).toBeGreaterThan(0.5);
    // everything the engines did is metered once: the committed steps, the taken-back 7 (metered
    // when it committed) and the 8 that fired (sampled and trained, metered with the rollback)
    const metered = (await readRunUsage(env.store, runId)).usage;
    const recount = (key: string) =>
      [...steps, ...back].reduce((a, s) => a + (s.metrics[key] ?? 0), 0);
    expect(
      back.find((s) => s.rolledBack.fired)!.metrics['usage/completion_tokens'],
    ).toBeGreaterThan(0);
    expect(metered).toMatchObject({
      promptTokens: recount('usage/prompt_tokens'),
      completionTokens: recount('usage/completion_tokens'),
      trainedTokens: recount('usage/trained_tokens'),
      toolCalls: recount('usage/tool_calls'),
    });
    // the rollout ledger follows: steps 1-10 once, 7-10 from generation 1, no copy left over
    const runDir = runArtifactDir(env.artifactDir, runId);
    expect(await listLedgerSteps(runDir)).toEqual(steps.map((s) => s.step));
    for (const s of steps) {
      expect((await readLedgerIndex(runDir, s.step))?.rollbacks).toBe(s.rollbacks ?? 0);
    }
    expect((await readdir(ledgerDir(runDir))).sort()).toEqual(
      steps.map((s) => path.basename(stepDir(runDir, s.step))),
    );

    // the firing: on the record, the stream and the transitions
    expect(run.guardrails).toMatchObject({ rollbacks: 1, learningRateScale: 0.5 });
    const [firing] = run.guardrails!.firings;
    expect(firing).toMatchObject({
      step: 8,
      action: 'rollback',
      rule: { name: 'kl-blowup', origin: 'spec' },
      restored: { step: 6 },
      rolledBackSteps: [7],
      rollbacks: 1,
    });
    expect(firing!.values.map((v) => v.step)).toEqual([7, 8]);
    // the trainer went back to the checkpoint of step 6 (the one the pointer held at step 6)
    expect(firing!.restored!.path).toMatch(/step-000006/);
    expect(fault.loaded).toContain(firing!.restored!.path);
    const transitions = await getTransitions(env.store, runId);
    expect(transitions.map((t) => t.to)).toEqual(['queued', 'running', 'running', 'succeeded']);
    expect(transitions[2]?.reason).toMatch(/kl-blowup.*rolled back to the checkpoint at step 6/);

    const events = (await readEvents(env.store, runId, '0', 10_000)).map((e) => e.event);
    const committed = events.flatMap((e) =>
      e.type === 'step:committed' ? [`${e.step}/${e.rollbacks ?? 0}`] : [],
    );
    // exactly once per (step, generation): the rolled-back 7 and its re-run are distinct
    expect(committed).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7].map((s) => `${s}/0`),
      ...[7, 8, 9, 10].map((s) => `${s}/1`),
    ]);
    expect(events.filter((e) => e.type === 'guardrail:fired')).toHaveLength(1);
  }, 180_000);
});

describe('guardrail notify and pause (sft, embedded engines)', () => {
  it('notify records the firing and goes on; pause checkpoints and pauses the run at the step', async () => {
    const dirs = embeddedTrainerDirs(env as unknown as WorkerConfig);
    const engines = defaultEmbeddedEngines({ trainerDirs: dirs });
    await env.startWorker({}, { executors: undefined, factories: { embedded: engines } });
    // the SFT loss is positive at every step: `loss-above` holds from step 1
    const runId = await env.submit(
      [
        'kind: sft',
        'steps: 8',
        'batchSize: 2',
        'checkpointInterval: 4',
        'guardrails:',
        '  rules:',
        '    - { metric: loss, when: above, value: 0, action: notify }',
        '    - { name: hold, metric: loss, when: above, value: 0, forSteps: 3, action: pause }',
      ].join('\n'),
    );
    const run = await eventually(
      async () => {
        const r = await getRun(env.store, runId);
        return r?.state === 'paused' || r?.state === 'failed' || r?.state === 'succeeded'
          ? r
          : null;
      },
      120_000,
      'the run paused',
    );
    expect(run.state).toBe('paused');
    // steps 1-3 committed, the run checkpointed at 3 (not a checkpoint step) and paused there
    expect((await readSteps(env.store, runId)).map((s) => s.step)).toEqual([1, 2, 3]);
    expect(run.checkpoint?.step).toBe(3);
    const firings = run.guardrails!.firings.map((f) => `${f.step}:${f.rule.name}:${f.action}`);
    expect(firings).toEqual([
      '1:loss-above:notify',
      '2:loss-above:notify',
      '3:loss-above:notify',
      '3:hold:pause',
    ]);
    const paused = (await getTransitions(env.store, runId)).at(-1);
    expect(paused).toMatchObject({ to: 'paused', by: 'guardrail' });
    expect(paused?.reason).toMatch(/guardrail 'hold' \(loss > 0 for 3 steps\) fired at step 3/);
    // nothing was ever a clean checkpoint: a rule held at every step
    expect(run.guardrails!.safeCheckpoint).toBeUndefined();
  }, 180_000);
});

describe('guardrail stop (sft, embedded engines)', () => {
  it('fails the run at once with the rule and the values; the step that fired is not recorded', async () => {
    const dirs = embeddedTrainerDirs(env as unknown as WorkerConfig);
    const engines = defaultEmbeddedEngines({ trainerDirs: dirs });
    await env.startWorker({}, { executors: undefined, factories: { embedded: engines } });
    const runId = await env.submit(
      [
        'kind: sft',
        'steps: 6',
        'batchSize: 2',
        'guardrails: { rules: [{ name: halt, metric: loss, when: above, value: 0, forSteps: 2, action: stop }] }',
      ].join('\n'),
    );
    const run = await eventually(
      async () => {
        const r = await getRun(env.store, runId);
        return r?.state === 'failed' || r?.state === 'succeeded' ? r : null;
      },
      120_000,
      'the run ended',
    );
    expect(run.state).toBe('failed');
    expect(run.attempt).toBe(1); // no retry
    expect(run.error).toMatch(
      /^ANNEAL_ERR_GUARDRAIL_STOP: guardrail 'halt' \(loss > 0 for 2 steps\) fired at step 2: [\d.]+ at 1, [\d.]+ at 2; stopping the run$/,
    );
    expect((await getTransitions(env.store, runId)).at(-1)).toMatchObject({ to: 'failed' });
    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => s.step)).toEqual([1]);
    expect(run.guardrails!.firings).toMatchObject([
      { step: 2, action: 'stop', rule: { name: 'halt' }, values: [{ step: 1 }, { step: 2 }] },
    ]);
    // step 2 trained before it fired: metered with the stop, beside the committed step 1
    const trained = (await readRunUsage(env.store, runId)).usage.trainedTokens;
    expect(trained).toBeGreaterThan(steps[0]!.metrics['usage/trained_tokens']!);
  }, 180_000);
});
