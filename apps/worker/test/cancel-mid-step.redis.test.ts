// A cancel sent while a step is under way takes effect at once, not when the step ends: the run's
// engine calls are abandoned (runtime/abortable.ts). The real SFT executor runs on a trainer
// whose third forward_backward never returns — a step of unbounded size — so on a runtime that
// only checks at step boundaries the run would never end. Two ways in: the control plane's
// cancel (flag + pub/sub message), and the flag alone (the message missed during a reconnect),
// which the worker reads after every heartbeat. Figures: cancel requested -> run `cancelled`.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  Datum,
  ForwardResult,
  OptimStepResult,
  SamplerWeights,
  TrainerEngine,
  TrainerModel,
} from '@anneal/engines';
import { getRun, markCancelRequested, requestCancel } from '@anneal/store';
import { STUB_EMBEDDED } from './fixtures/engines.ts';
import { recordResult } from './reliability/results.ts';
import { type TestEnv, eventually, testEnv } from './helpers.ts';

const HEARTBEAT_SECONDS = 0.5;
const HUGE_STEP = 3;

let env: TestEnv;
let hung: Array<() => void>;
beforeEach(async () => {
  env = await testEnv();
  hung = [];
});
afterEach(async () => {
  await env.cleanup();
});

/** A model whose forward_backward of step HUGE_STEP never completes (it records that it began). */
class HugeStepModel implements TrainerModel {
  readonly id = 'huge-step';
  private calls = 0;
  forward(data: readonly Datum[]): Promise<ForwardResult> {
    return Promise.resolve(this.result(data));
  }
  forwardBackward(data: readonly Datum[]): Promise<ForwardResult> {
    this.calls += 1;
    if (this.calls === HUGE_STEP) {
      return new Promise(() => hung.push(() => undefined)); // still computing, forever
    }
    return Promise.resolve(this.result(data));
  }
  optimStep(): Promise<OptimStepResult> {
    return Promise.resolve({ gradNorm: 1, metrics: {} });
  }
  saveWeights(name: string): Promise<string> {
    return Promise.resolve(`mem://${name}`);
  }
  loadWeights(): Promise<void> {
    return Promise.resolve();
  }
  saveWeightsForSampler(name: string): Promise<SamplerWeights> {
    return Promise.resolve({ name, path: `mem://sampler/${name}` });
  }
  private result(data: readonly Datum[]): ForwardResult {
    return {
      logprobs: data.map((d) => new Float32Array(d.modelInput.length).fill(-1)),
      metrics: {},
    };
  }
}

async function startHugeStepRun() {
  const trainer = async ({ capabilities }: { capabilities: TrainerEngine['capabilities'] }) => ({
    capabilities,
    createModel: async () => new HugeStepModel(),
    close: async () => undefined,
  });
  const worker = await env.startWorker(
    { heartbeatSeconds: HEARTBEAT_SECONDS },
    { executors: undefined, factories: { embedded: { ...STUB_EMBEDDED, trainer } } },
  );
  const runId = await env.submit('kind: sft\nsteps: 10\nbatchSize: 2\ncheckpointInterval: 100');
  await eventually(() => hung.length === 1, 20_000, 'the huge step under way');
  expect((await getRun(env.store, runId))?.lastStep).toBe(HUGE_STEP - 1);
  return { worker, runId };
}

async function cancelledWithin(runId: string): Promise<number> {
  const sentAt = Date.now();
  await eventually(
    async () => (await getRun(env.store, runId))?.state === 'cancelled',
    20_000,
    'cancelled',
  );
  return Date.now() - sentAt;
}

describe('cancel mid-step', () => {
  it('a cancel (flag + message) ends a run whose step never finishes', async () => {
    const { worker, runId } = await startHugeStepRun();
    const sent = requestCancel(env.store, runId, 'user asked');
    const [ms] = await Promise.all([cancelledWithin(runId), sent]);
    const run = await getRun(env.store, runId, { transitions: true });
    expect(run?.transitions?.at(-1)?.reason).toBe('cancelled: user asked');
    expect(run?.lastStep).toBe(HUGE_STEP - 1); // the abandoned step is not recorded
    await eventually(() => worker.runs().length === 0, 5000, 'slot free');
    // Far below the 20 s deadline above; recorded, not asserted tighter (a loaded machine).
    expect(ms).toBeLessThan(10_000);
    await recordResult({
      scenario: 'cancel mid-step',
      variant: 'message',
      lost: 0,
      duplicated: 0,
      detectMs: null,
      recoverMs: ms,
      detail: `sft, step ${HUGE_STEP} never finishes; requestCancel -> run cancelled (its engine calls abandoned)`,
    });
  });

  it('a cancel whose message was missed lands within a heartbeat, also mid-step', async () => {
    const { runId } = await startHugeStepRun();
    // The flag only: no pub/sub message. The reason travels with the flag, so the transition
    // carries the asker's text whichever way the worker learnt of the cancel.
    const sent = markCancelRequested(env.store, runId, { reason: 'user asked' });
    const [ms] = await Promise.all([cancelledWithin(runId), sent]);
    const run = await getRun(env.store, runId, { transitions: true });
    expect(run?.transitions?.at(-1)?.reason).toBe('cancelled: user asked');
    expect(ms).toBeLessThan(10_000);
    await recordResult({
      scenario: 'cancel mid-step',
      variant: 'message missed',
      lost: 0,
      duplicated: 0,
      detectMs: null,
      recoverMs: ms,
      detail: `sft, step ${HUGE_STEP} never finishes; cancel flag only, read after each heartbeat (${HEARTBEAT_SECONDS} s)`,
    });
  });
});
