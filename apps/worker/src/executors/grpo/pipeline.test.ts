// Pipelined GRPO on fakes whose logprobs are known per policy version (pipeline-fakes.ts,
// docs/recipe.md "Pipelined GRPO"): the IS ratio of a lagged rollout is π_train/μ_version
// exactly, a rollout never mixes versions, no version is released or deleted while a batch
// samples from it, sampling of step s+1 overlaps training of step s (ordering, not timing),
// stop and errors settle every launched batch, and a crash + resume records every step once.
import { describe, expect, it } from 'vitest';
import { METRIC } from '../metrics.ts';
import { memoryContext } from '../../../test/executors/fakes.ts';
import { runGrpo } from './index.ts';
import { samplingSeed } from '../common/sampling-seed.ts';
import {
  VersionedInference,
  VersionedTrainerModel,
  fakeResources,
  grpoSpec,
  mu,
  pi,
} from '../../../test/executors/pipeline-fakes.ts';

const SEED = 7;

/** A trainer model with a checkpoint delete: probe-weights.ts scores the probe on a copy. */
class CopyingTrainerModel extends VersionedTrainerModel {
  readonly deletedWeights: string[] = [];
  deleteWeights(path: string): Promise<boolean> {
    this.deletedWeights.push(path);
    return Promise.resolve(true);
  }
}

function setup(lag: number, steps = 3, options: { holdSecondTurns?: boolean } = {}) {
  const spec = grpoSpec({ seed: SEED, steps, rollout: { maxPolicyLag: lag } });
  const inference = new VersionedInference(SEED, steps, options);
  const model = new VersionedTrainerModel(inference);
  const ctx = memoryContext(spec, fakeResources(inference, model));
  return { spec, inference, model, ctx };
}

/** Sampling logprobs on the generated positions of each datum handed to forward_backward. */
function sampledLogprobs(model: VersionedTrainerModel, step: number): number[][] {
  return model.forwardBackwardData[step - 1]!.map((d) =>
    [...d.lossFnInputs['logprobs']!].filter((l) => l !== 0),
  );
}

const indexOf = (
  inference: VersionedInference,
  match: (e: (typeof inference.events)[number]) => boolean,
) => inference.events.findIndex(match);

describe('pipelined GRPO (rollout.maxPolicyLag)', () => {
  it('lag 1: step s trains on rollouts of version max(s−2, 0); the IS ratio is exp(π_{s−1} − μ_version) exactly', async () => {
    const { inference, model, ctx } = setup(1, 3, { holdSecondTurns: true });
    const result = await runGrpo(ctx);
    expect(result.stopped).toBe(false);
    expect(ctx.commitOrder).toEqual([1, 2, 3]);
    const samplingVersion: Record<number, number> = { 1: 0, 2: 0, 3: 1 };
    for (const step of [1, 2, 3]) {
      const v = samplingVersion[step]!;
      const lag = step - 1 - v;
      const datums = sampledLogprobs(model, step);
      expect(datums).toHaveLength(4); // 2 prompts × G = 2
      // every generated token of every rollout, both turns: the sampling version's μ
      for (const logprobs of datums) {
        expect(logprobs.length).toBeGreaterThan(4);
        logprobs.forEach((l) => expect(l).toBeCloseTo(mu(v), 6));
      }
      const ratio = Math.exp(pi(step - 1) - mu(v));
      const d = mu(v) - pi(step - 1);
      const record = ctx.steps.get(step)!;
      const [own, other] = lag === 0 ? ['fresh', 'lagged'] : ['lagged', 'fresh'];
      expect(record[METRIC.isRatioMean]).toBeCloseTo(ratio, 5);
      expect(record[METRIC.isRatioMax]).toBeCloseTo(ratio, 5);
      expect(record['policy_lag/mean']).toBe(lag);
      expect(record['policy_lag/max']).toBe(lag);
      expect(record[`is_ratio_by_lag/${own}`]).toBeCloseTo(ratio, 5);
      expect(record[`is_ratio_by_lag/${other}`]).toBeNull();
      expect(record[`train_inference_kl_by_lag/${own}`]).toBeCloseTo(Math.exp(-d) - 1 + d, 6);
      expect(record[METRIC.trainerBusy]).toBeGreaterThan(0);
      expect(record[METRIC.samplerBusy]).toBeGreaterThanOrEqual(0);
    }
    expect(inference.violations).toEqual([]);
    expect(inference.running()).toBe(0);
  });

  it.each([1, 2])(
    'lag %i: mismatch_kl is the mismatch alone at every step, from a probe of the trained version when the batch is lagged',
    async (lag) => {
      const { inference, ctx } = setup(lag, 4);
      await runGrpo(ctx);
      // π_train and μ of the same version differ by d = μ(v) − π(v) = −0.05 for every v
      const d = mu(0) - pi(0);
      const mismatch = Math.exp(-d) - 1 + d;
      const probed: number[] = [];
      for (const step of [1, 2, 3, 4]) {
        const record = ctx.steps.get(step)!;
        // to float32 logprob precision (d is −0.05 ± 2e-8)
        expect(record['mismatch_kl']! / mismatch, `step ${step}`).toBeCloseTo(1, 5);
        const tokens = record['mismatch_kl/tokens']!;
        if (record['policy_lag/max'] === 0) {
          expect(tokens).toBe(record[METRIC.trainedTokens]); // the fresh batch itself
        } else {
          probed.push(step);
          // whole rollouts, at least 32 (all 4 of this batch), both turns: <|call|>qnull<|/call|>
          // (the fake writes the batch's step into the query; a probe seed is no batch's) and
          // <|answer|>x<|eos|>
          expect(record[METRIC.trainedTokens]).toBe(4 * (4 + 3));
          expect(tokens).toBe(4 * (7 + 3));
          // the step's own KL measures lag and mismatch together, and differs
          expect(Math.abs(record[METRIC.trainInferenceKl]! - mismatch)).toBeGreaterThan(1e-5);
        }
      }
      expect(probed).toEqual([2, 3, 4]); // every step after the first is lagged
      // each probe sampled the version its step trains, v = s − 1: a whole rollout, its search
      // call turn and its answer turn after the tool result
      const probeTurns = inference.events.flatMap((e) =>
        e.kind === 'sample' && e.step === null && e.name.includes('-policy')
          ? [`${e.name} turn ${e.turn}`]
          : [],
      );
      expect(probeTurns.sort()).toEqual(
        probed
          .flatMap((s) => [1, 2].map((t) => `${ctx.runId}-policy-v${s - 1} turn ${t}`))
          .flatMap((turn) => [turn, turn, turn, turn])
          .sort(),
      );
      expect(inference.violations).toEqual([]);
      expect(inference.running()).toBe(0);
    },
  );

  it('lag 1: a rollout keeps its version across a weight sync; versions are released only when unused', async () => {
    const { inference, ctx } = setup(1, 4, { holdSecondTurns: true });
    await runGrpo(ctx);
    const policyName = (v: number) => `${ctx.runId}-policy-v${v}`;
    // batch b's second turns were held until version b−1 was loaded, and still sampled on the
    // version the batch was launched with
    for (const [step, version] of [
      [2, 0],
      [3, 1],
      [4, 2],
    ] as const) {
      const turns = inference.events.filter((e) => e.kind === 'sample' && e.step === step);
      expect(turns.some((e) => e.kind === 'sample' && e.turn === 2)).toBe(true);
      expect(new Set(turns.map((e) => (e.kind === 'sample' ? e.name : '')))).toEqual(
        new Set([policyName(version)]),
      );
      const loadedNext = indexOf(
        inference,
        (e) => e.kind === 'load' && e.name === policyName(step - 1),
      );
      expect(inference.events.lastIndexOf(turns.at(-1)!)).toBeGreaterThan(loadedNext);
    }
    expect(inference.violations).toEqual([]);
    const released = inference.events.flatMap((e) => (e.kind === 'release' ? [e.name] : []));
    expect(released).toEqual([0, 1, 2, 3].map(policyName)); // v4, the last sync, is current
    // exports of released versions deleted, never the reference export v0 is served from
    const deleted = inference.events.flatMap((e) => (e.kind === 'delete' ? [e.path] : []));
    expect(deleted).toEqual([1, 2, 3].map((v) => `mem://sampler/${ctx.runId}-sampler-${v}@v${v}`));
  });

  it('lag 1: sampling of step s+1 starts while step s trains', async () => {
    const { inference, model, ctx } = setup(1, 3);
    // Each forward_backward waits for the next batch's sampling (5 s: a deadlock guard only).
    model.beforeTrain = (step) =>
      step >= 3
        ? Promise.resolve()
        : Promise.race([
            inference.until(() => inference.sampledSteps().has(step + 1)),
            new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref()),
          ]);
    await runGrpo(ctx);
    for (const step of [1, 2]) {
      const trainStart = indexOf(
        inference,
        (e) => e.kind === 'train' && e.at === 'start' && e.step === step,
      );
      const trainEnd = indexOf(
        inference,
        (e) => e.kind === 'train' && e.at === 'end' && e.step === step,
      );
      const nextSample = indexOf(inference, (e) => e.kind === 'sample' && e.step === step + 1);
      expect(nextSample).toBeGreaterThanOrEqual(0);
      expect(nextSample).toBeLessThan(trainEnd);
      expect(trainStart).toBeLessThan(trainEnd);
    }
  });

  it.each([
    ['a trainer that cannot copy', VersionedTrainerModel],
    ['a trainer that can (no copy needed)', CopyingTrainerModel],
  ])(
    'lag 1 on %s: a probe in before forward_backward returns is scored beside it, before optim_step',
    async (_, Model) => {
      const spec = grpoSpec({ seed: SEED, steps: 3, rollout: { maxPolicyLag: 1 } });
      const inference = new VersionedInference(SEED, 3);
      const model = new Model(inference);
      const ctx = memoryContext(spec, fakeResources(inference, model));
      // Each lagged step's forward_backward waits for the probe's forward (5 s: a deadlock guard
      // only): a step that sent the probe's forward only after forward_backward returned would
      // pass the guard and fail the order below.
      const forwardOf = (step: number) => (e: (typeof inference.events)[number]) =>
        e.kind === 'forward' && e.step === step;
      model.beforeTrain = (step) =>
        step === 1
          ? Promise.resolve()
          : Promise.race([
              inference.until(() => inference.events.some(forwardOf(step))),
              new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref()),
            ]);
      await runGrpo(ctx);
      const at = (match: (e: (typeof inference.events)[number]) => boolean) =>
        indexOf(inference, match);
      for (const step of [2, 3]) {
        const trainStart = at((e) => e.kind === 'train' && e.at === 'start' && e.step === step);
        const trainEnd = at((e) => e.kind === 'train' && e.at === 'end' && e.step === step);
        const optim = at((e) => e.kind === 'optim' && e.step === step);
        const forward = at(forwardOf(step));
        expect(trainStart, `step ${step}`).toBeLessThan(forward);
        expect(forward, `step ${step}`).toBeLessThan(trainEnd);
        expect(trainEnd, `step ${step}`).toBeLessThan(optim);
      }
      // the trainer calls of a step are unchanged: forward_backward, the probe's one forward when
      // the batch is lagged, optim_step
      const calls = (step: number) =>
        inference.events.flatMap((e) =>
          (e.kind === 'forward' || e.kind === 'optim' || e.kind === 'train') && e.step === step
            ? [e.kind === 'train' ? `train ${e.at}` : e.kind]
            : [],
        );
      expect(calls(1)).toEqual(['train start', 'train end', 'optim']);
      for (const step of [2, 3]) {
        expect(calls(step)).toEqual(['train start', 'forward', 'train end', 'optim']);
      }
      // and the probe still measures the mismatch alone (π and μ of version s − 1)
      const d = mu(0) - pi(0);
      for (const step of [2, 3]) {
        expect(ctx.steps.get(step)!['mismatch_kl']! / (Math.exp(-d) - 1 + d)).toBeCloseTo(1, 5);
      }
      if (model instanceof CopyingTrainerModel) expect(model.deletedWeights).toEqual([]); // no copy
      expect(inference.violations).toEqual([]);
    },
  );

  it('lag 1 on a trainer that can copy: a probe not in when forward_backward returns is scored at θ_{s−1} on a copy, and optim_step does not wait for it', async () => {
    const spec = grpoSpec({ seed: SEED, steps: 3, rollout: { maxPolicyLag: 1 } });
    const inference = new VersionedInference(SEED, 3);
    const model = new CopyingTrainerModel(inference);
    const ctx = memoryContext(spec, fakeResources(inference, model));
    const probeSeeds = new Map<number, number>();
    for (const step of [2, 3]) {
      for (let i = 0; i < 64; i++)
        probeSeeds.set(samplingSeed(SEED, `mismatch-probe:${step}:${i}`), step);
    }
    const optimOf = (step: number) => (e: (typeof inference.events)[number]) =>
      e.kind === 'optim' && e.step === step;
    // Each probe's rollouts are held until its step's optim_step (5 s: a deadlock guard only):
    // a step whose optim_step waited for the probe would pass the guard and fail the order below.
    inference.beforeSample = (request) => {
      const step = probeSeeds.get(request.seed ?? -1);
      if (step === undefined) return Promise.resolve();
      return Promise.race([
        inference.until(() => inference.events.some(optimOf(step))),
        new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref()),
      ]);
    };
    await runGrpo(ctx);
    const d = mu(0) - pi(0);
    for (const step of [2, 3]) {
      const optim = indexOf(inference, optimOf(step));
      const probeSample = inference.events.findIndex(
        (e) =>
          e.kind === 'sample' && e.step === null && e.name === `${ctx.runId}-policy-v${step - 1}`,
      );
      const forward = indexOf(inference, (e) => e.kind === 'forward' && e.step === step);
      expect(optim, `step ${step}`).toBeLessThan(probeSample);
      expect(probeSample, `step ${step}`).toBeLessThan(forward);
      // scored at θ_{s−1} although the policy has moved on: the mismatch alone, as before
      expect(ctx.steps.get(step)!['mismatch_kl']! / (Math.exp(-d) - 1 + d)).toBeCloseTo(1, 5);
    }
    // one copy per lagged step, saved at the weights the step trains, each deleted once scored
    expect(model.deletedWeights).toEqual([
      `mem://ckpt/${ctx.runId}-probe-2@v1`,
      `mem://ckpt/${ctx.runId}-probe-3@v2`,
    ]);
    expect(inference.violations).toEqual([]);
  });

  it('lag 1, rollout.probeEvery 2: only the even steps sample and score a probe; the odd lagged steps record no mismatch', async () => {
    const spec = grpoSpec({ seed: SEED, steps: 5, rollout: { maxPolicyLag: 1, probeEvery: 2 } });
    const inference = new VersionedInference(SEED, 5);
    const model = new VersionedTrainerModel(inference);
    const ctx = memoryContext(spec, fakeResources(inference, model));
    await runGrpo(ctx);
    const forwards = inference.events.flatMap((e) => (e.kind === 'forward' ? [e.step] : []));
    expect(forwards).toEqual([2, 4]);
    // probe requests (no batch step) go to the version each probed step trains: v1 and v3 only
    const probeNames = new Set(
      inference.events.flatMap((e) =>
        e.kind === 'sample' && e.step === null && e.name.includes('-policy') ? [e.name] : [],
      ),
    );
    expect([...probeNames].sort()).toEqual([`${ctx.runId}-policy-v1`, `${ctx.runId}-policy-v3`]);
    const d = mu(0) - pi(0);
    for (const step of [2, 4]) {
      const record = ctx.steps.get(step)!;
      expect(record['mismatch_kl']! / (Math.exp(-d) - 1 + d)).toBeCloseTo(1, 5);
      expect(record['mismatch_kl/tokens']).toBeGreaterThan(0);
    }
    for (const step of [3, 5]) {
      const record = ctx.steps.get(step)!;
      expect(record['policy_lag/max'], `step ${step}`).toBe(1);
      expect(record['mismatch_kl'], `step ${step}`).toBeNull();
      expect(record['mismatch_kl/tokens'], `step ${step}`).toBe(0);
      expect(record['phase_seconds/probe'] ?? null, `step ${step}`).toBeNull();
    }
    // step 1 is fresh: measured by its own rollouts, as at every probeEvery
    expect(ctx.steps.get(1)!['mismatch_kl/tokens']).toBeGreaterThan(0);
    expect(inference.violations).toEqual([]);
  });

  it('lag 0: unchanged on-policy path — one stable name, each step on the previous step’s weights', async () => {
    const { inference, model, ctx } = setup(0, 3);
    await runGrpo(ctx);
    for (const step of [1, 2, 3]) {
      sampledLogprobs(model, step).forEach((logprobs) =>
        logprobs.forEach((l) => expect(l).toBeCloseTo(mu(step - 1), 6)),
      );
      const record = ctx.steps.get(step)!;
      expect(record['policy_lag/max']).toBe(0);
      expect(record['is_ratio_by_lag/fresh']).toBeCloseTo(record[METRIC.isRatioMean]!, 6);
      expect(record['is_ratio_by_lag/lagged']).toBeNull();
    }
    const policyNames = new Set(
      inference.events.flatMap((e) =>
        e.kind === 'sample' && e.name.includes('-policy') ? [e.name] : [],
      ),
    );
    expect(policyNames).toEqual(new Set([`${ctx.runId}-policy`]));
    // sequential: no sampling for step s+1 before step s has trained
    for (const step of [1, 2]) {
      const trainEnd = indexOf(
        inference,
        (e) => e.kind === 'train' && e.at === 'end' && e.step === step,
      );
      const nextSample = indexOf(inference, (e) => e.kind === 'sample' && e.step === step + 1);
      expect(nextSample).toBeGreaterThan(trainEnd);
    }
    expect(inference.events.some((e) => e.kind === 'release')).toBe(false);
  });

  it('a failed prefetched batch fails its own step with the sampler’s error; earlier steps commit', async () => {
    const { inference, ctx } = setup(1, 4);
    inference.failStep = 3; // launched while step 2 trains
    await expect(runGrpo(ctx)).rejects.toThrow('sampler failed on the batch of step 3');
    expect(ctx.commitOrder).toEqual([1, 2]);
    // every batch settled: the last engine requests see their abort, nothing new is sampled
    const seen = inference.events.length;
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(inference.running()).toBe(0);
    expect(inference.events.slice(seen).filter((e) => e.kind === 'sample')).toEqual([]);
  });

  it('stop at a step boundary aborts the prefetched batches and settles them', async () => {
    const spec = grpoSpec({ seed: SEED, steps: 6, rollout: { maxPolicyLag: 2 } });
    const inference = new VersionedInference(SEED, 6);
    const model = new VersionedTrainerModel(inference);
    const ctx = memoryContext(spec, fakeResources(inference, model), {
      onCommit: (step, c) => step === 2 && c.controller.abort(),
    });
    const result = await runGrpo(ctx);
    expect(result.stopped).toBe(true);
    expect(ctx.commitOrder).toEqual([1, 2]);
    expect(ctx.checkpoints.at(-1)?.step).toBe(2);
    expect(inference.sampledSteps().has(4)).toBe(true); // launched at step 2, never trained
    expect(model.forwardBackwardData).toHaveLength(2);
    expect(inference.running()).toBe(0);
    expect(inference.violations).toEqual([]);
  });

  it('crash with batches in flight, then resume: every step recorded exactly once, same seeds', async () => {
    const spec = grpoSpec({ seed: SEED, steps: 6, rollout: { maxPolicyLag: 1 } });
    const first = new VersionedInference(SEED, 6);
    const records = new Map<number, Record<string, number | null>>();
    const crashed = memoryContext(spec, fakeResources(first, new VersionedTrainerModel(first)), {
      onCommit: (step, ctx) => {
        records.set(step, ctx.steps.get(step)!);
        if (step === 3) throw new Error('worker killed after committing step 3');
      },
    });
    await expect(runGrpo(crashed)).rejects.toThrow('worker killed');
    expect(crashed.commitOrder).toEqual([1, 2, 3]);
    expect(first.sampledSteps().has(4)).toBe(true); // batch 4 was in flight at the crash
    expect(first.running()).toBe(0);
    const checkpoint = crashed.checkpoints.at(-1)!;
    expect(checkpoint.step).toBe(2);

    const second = new VersionedInference(SEED, 6);
    const resumed = memoryContext(spec, fakeResources(second, new VersionedTrainerModel(second)), {
      resumeFrom: checkpoint,
      runId: crashed.runId,
      onCommit: (step, ctx) => {
        if (!records.has(step)) records.set(step, ctx.steps.get(step)!);
      },
    });
    await runGrpo(resumed);
    expect(resumed.commitOrder).toEqual([3, 4, 5, 6]); // step 3 re-run; the store keeps the first
    expect([...records.keys()].sort()).toEqual([1, 2, 3, 4, 5, 6]);
    // the regenerated batches use the same sampling seeds
    const firstTurns = (engine: VersionedInference, step: number) =>
      engine.events.filter((e) => e.kind === 'sample' && e.turn === 1 && e.step === step).length;
    for (const step of [3, 4]) expect(firstTurns(second, step)).toBe(firstTurns(first, step));
    // a fresh pipeline: step 3 samples the resumed weights (lag 0), step 4 is prefetched (lag 1)
    expect(resumed.steps.get(3)!['policy_lag/max']).toBe(0);
    expect(resumed.steps.get(4)!['policy_lag/max']).toBe(1);
  });
});
