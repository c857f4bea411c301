import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stepTokenMathScalar, type StepBatch, type StepTokenStats } from './step-math.ts';
import { wasmStepErrorBounds } from './step-math-wasm-bounds.ts';
import { stepRunsInPlace, stepTokenMath, stepTokenMathWasm } from './step-math-wasm.ts';
import { createStepBuffers, releaseStepBuffers, wasmSimdAvailable } from './step-wasm-kernel.ts';

const LN2 = Math.LN2;
const EPS32 = 2 ** -24; // float32 unit roundoff

interface Batch extends StepBatch {
  advantages: number[];
}

/** Three ways into the kernel: in place (createStepBuffers), staged, staged in tiny slices. */
type Path = 'zero-copy' | 'staged' | { stageTokens: number };

function runPath(batch: Batch, path: Path): StepTokenStats {
  if (path === 'zero-copy') {
    const buffers = createStepBuffers(batch.logpTrain.length, batch.advantages.length);
    buffers.logpTrain.set(batch.logpTrain);
    buffers.logpInfer.set(batch.logpInfer);
    buffers.offsets.set(batch.offsets);
    buffers.advantages.set(batch.advantages);
    expect(stepRunsInPlace(buffers)).toBe(true);
    return stepTokenMathWasm(buffers);
  }
  return stepTokenMathWasm(batch, path === 'staged' ? undefined : path.stageTokens);
}

function expectAgreement(batch: Batch, path: Path | StepTokenStats): void {
  const want = stepTokenMathScalar(batch);
  const got = typeof path === 'object' && 'objective' in path ? path : runPath(batch, path);
  const bounds = wasmStepErrorBounds(batch, want);
  for (const key of Object.keys(bounds) as Array<keyof StepTokenStats>) {
    const [a, b] = [got[key], want[key]];
    if (!Number.isFinite(b)) {
      expect(Object.is(a, b), `${key}: ${a} vs reference ${b}`).toBe(true);
      continue;
    }
    const bound = bounds[key] + 1e-14 * Math.abs(b); // plus float64 summation-order noise
    expect(Math.abs(a - b), `${key}: ${a} vs reference ${b} (bound ${bound})`).toBeLessThanOrEqual(
      bound,
    );
  }
}

/** Rollout descriptions for fast-check: length and how far train and inference logprobs differ. */
const rolloutArb = fc.record({
  length: fc.integer({ min: 0, max: 70 }),
  mismatch: fc.constantFrom(0, 0.04, 0.6, 3, 30, 200),
  special: fc.constantFrom(null, null, null, null, NaN, Infinity, -Infinity),
  advantage: fc.double({ min: -2, max: 2, noNaN: true }),
});

interface RolloutSpec {
  length: number;
  mismatch: number; // logp_train − logp_infer uniform in ±mismatch
  special: number | null; // one token's logp_train replaced by this (NaN, ±Infinity)
  advantage: number;
}

function buildBatch(rollouts: RolloutSpec[], seed: number, logpScale: number): Batch {
  const offsets = new Int32Array(rollouts.length + 1);
  rollouts.forEach((r, i) => (offsets[i + 1] = offsets[i]! + r.length));
  const tokens = offsets[rollouts.length]!;
  let state = seed >>> 0;
  const noise = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const logpInfer = Float32Array.from({ length: tokens }, () => -logpScale * noise());
  const logpTrain = new Float32Array(tokens);
  rollouts.forEach((r, i) => {
    for (let t = offsets[i]!; t < offsets[i + 1]!; t++)
      logpTrain[t] = logpInfer[t]! + (noise() - 0.5) * 2 * r.mismatch;
    if (r.special !== null && r.length > 0)
      logpTrain[offsets[i]! + Math.floor(noise() * r.length)] = r.special;
  });
  return { logpTrain, logpInfer, offsets, advantages: rollouts.map((r) => r.advantage) };
}

describe.runIf(wasmSimdAvailable())('stepTokenMath on the WebAssembly SIMD kernel', () => {
  const paths: Path[] = ['zero-copy', 'staged', { stageTokens: 5 }];

  it.each(paths)('hand-computed batch: ratios [1, 2 | 0.5], Â = [0.5, −0.5] (%o)', (path) => {
    const batch: Batch = {
      logpTrain: Float32Array.of(-1, -0.5, -2),
      logpInfer: Float32Array.of(-1, -0.5 - LN2, -2 + LN2),
      offsets: Int32Array.of(0, 2, 3),
      advantages: [0.5, -0.5],
    };
    const metrics = runPath(batch, path);
    expect(metrics.tokens).toBe(3);
    expect(metrics.k1).toBeCloseTo(0, 6);
    expect(metrics.k3).toBeCloseTo((0 + (2 - 1 - LN2) + (0.5 - 1 + LN2)) / 3, 6);
    expect(metrics.ratioMean).toBeCloseTo(3.5 / 3, 6);
    expect(metrics.ratioMin).toBeCloseTo(0.5, 6);
    expect(metrics.ratioMax).toBeCloseTo(2, 6);
    expect(metrics.objective).toBeCloseTo(0.25, 6);
    expectAgreement(batch, path);
  });

  it.each(paths)('empty batches: no rollouts; only empty rollouts (%o)', (path) => {
    const empty = new Float32Array(0);
    for (const offsets of [Int32Array.of(0), Int32Array.of(0, 0, 0)]) {
      const batch: Batch = {
        logpTrain: empty,
        logpInfer: empty,
        offsets,
        advantages: Array.from({ length: offsets.length - 1 }, () => 1),
      };
      const metrics = runPath(batch, path);
      const want = stepTokenMathScalar(batch);
      expect(metrics).toEqual(want); // NaN statistics, objective 0
      expect(metrics.k3).toBeNaN();
    }
  });

  it('exp, r − 1 and the k3 term per token across d ∈ [−80, 80], full vectors and tails', () => {
    const grid = [
      ...Array.from({ length: 2001 }, (_, i) => (i - 1000) * 1e-3),
      ...Array.from({ length: 1601 }, (_, i) => (i - 800) / 10),
      ...Array.from({ length: 231 }, (_, i) => ((i - 115) * LN2) / 2 + 1e-6),
      ...[1e-30, -1e-30, 1e-8, -1e-8, 0.3465, 0.34657, -0.34657, 80, -80],
    ].map(Math.fround);
    const worst = { ratio: 0, em1: 0, kNear: 0, kMid: 0 };
    for (const d of grid) {
      for (const length of [1, 4, 7]) {
        const batch: Batch = {
          logpTrain: new Float32Array(length).fill(d), // d − 0 is exact: the kernel sees d
          logpInfer: new Float32Array(length),
          offsets: Int32Array.of(0, length),
          advantages: [1],
        };
        const metrics = runPath(batch, 'staged');
        const relative = (got: number, want: number) => (want === 0 ? got : got / want - 1);
        worst.ratio = Math.max(worst.ratio, Math.abs(relative(metrics.ratioMean, Math.exp(d))));
        // r − 1 keeps its own relative precision near r = 1 (as far as float64 ratioMean shows it)
        if (Math.abs(d) > 1e-6 && Math.abs(d) < 0.5)
          worst.em1 = Math.max(worst.em1, Math.abs(relative(metrics.ratioMean - 1, Math.expm1(d))));
        const k = Math.abs(d) < 1e-3 ? d * d * (0.5 + d / 6 + (d * d) / 24) : Math.expm1(d) - d;
        // (k ≈ d²/2 below float32's range, e.g. d = 1e-30, comes out 0: an absolute error < 1e-30)
        const kError = Math.abs(metrics.k3 - k) / Math.max(k, 1e-30);
        if (Math.abs(d) >= 0.3465 && Math.abs(d) < 1) worst.kMid = Math.max(worst.kMid, kError);
        else worst.kNear = Math.max(worst.kNear, kError);
      }
    }
    // in units of the float32 unit roundoff 2^-24 (measured: 1.2, 3.7, 4.1, 13.4)
    expect(worst.ratio / EPS32).toBeLessThanOrEqual(2);
    expect(worst.em1 / EPS32).toBeLessThanOrEqual(5);
    expect(worst.kNear / EPS32).toBeLessThanOrEqual(6); // k = g: no cancellation
    expect(worst.kMid / EPS32).toBeLessThanOrEqual(16); // k = r − 1 − d, a small difference
  });

  it('property: agrees with the scalar reference (random batches, extreme and non-finite d)', () => {
    fc.assert(
      fc.property(
        fc.array(rolloutArb, { minLength: 0, maxLength: 12 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        fc.constantFrom(0.1, 3, 20),
        fc.constantFrom<Path>(
          'zero-copy',
          'staged',
          { stageTokens: 1 },
          { stageTokens: 9 },
          { stageTokens: 64 },
        ),
        (rollouts, seed, logpScale, path) => {
          expectAgreement(buildBatch(rollouts, seed, logpScale), path);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the error bounds are tight enough to mean something (realistic batch)', () => {
    const batch = buildBatch(
      Array.from({ length: 16 }, (_, i) => ({
        ...{ length: 256, mismatch: 0.04, special: null },
        advantage: i % 2 ? 0.5 : -0.5,
      })),
      11,
      3,
    );
    const want = stepTokenMathScalar(batch);
    const bounds = wasmStepErrorBounds(batch, want);
    expect(bounds.ratioMean / want.ratioMean).toBeLessThan(1e-7);
    expect(bounds.k3 / want.k3).toBeLessThan(5e-6);
    expect(bounds.k1).toBeLessThan(2e-6 * 0.02); // 20 roundings of mean |d| = 0.02
    expect(bounds.ratioFractionOutside).toBe(0);
  });

  it('stepTokenMath takes the kernel by default (same numbers as stepTokenMathWasm)', () => {
    const batch = buildBatch(
      Array.from({ length: 8 }, (_, i) => ({
        length: 50 + i,
        mismatch: 0.6,
        special: null,
        advantage: i - 3.5,
      })),
      7,
      3,
    );
    expect(stepTokenMath(batch)).toEqual(stepTokenMathWasm(batch));
    expect(stepTokenMath(batch)).not.toEqual(stepTokenMathScalar(batch));
  });

  it('views over kernel memory that are not a createStepBuffers layout are staged, not misread', () => {
    const buffers = createStepBuffers(64, 1);
    // a view that starts inside the kernel's scratch area must not be scanned in place
    const overScratch = new Float32Array(buffers.logpTrain.buffer, 1024, 64).fill(-1);
    buffers.logpInfer.fill(-1.25);
    const batch: Batch = {
      logpTrain: overScratch,
      logpInfer: buffers.logpInfer,
      offsets: Int32Array.of(0, 64),
      advantages: [1],
    };
    expect(stepRunsInPlace(batch)).toBe(false);
    expectAgreement(batch, 'staged');
    expect(stepTokenMath(batch).ratioMean).toBeCloseTo(Math.exp(0.25), 6);
  });
});

describe('stepTokenMath input checks and createStepBuffers', () => {
  it('rejects mismatched inputs with the reference messages', () => {
    const batch = {
      logpTrain: new Float32Array(3),
      logpInfer: new Float32Array(3),
      offsets: Int32Array.of(0, 3),
      advantages: [1],
    };
    expect(() => stepTokenMath({ ...batch, logpInfer: new Float32Array(2) })).toThrow(
      'logpTrain/logpInfer: lengths differ (3 vs 2)',
    );
    expect(() => stepTokenMath({ ...batch, offsets: Int32Array.of(0, 2) })).toThrow(
      'offsets: last entry 2 != token count 3',
    );
    expect(() => stepTokenMath({ ...batch, advantages: [1, 2] })).toThrow(
      'advantages: 2 values for 1 rollouts',
    );
  });

  it('createStepBuffers: shapes, zeroed, field-named errors', () => {
    const buffers = createStepBuffers(10, 3);
    expect([buffers.logpTrain.length, buffers.logpInfer.length]).toEqual([10, 10]);
    expect([buffers.offsets.length, buffers.advantages.length]).toEqual([4, 3]);
    expect(buffers.tokenAdvantages.length).toBe(10);
    expect(buffers.logpTrain.every((v) => v === 0)).toBe(true);
    expect(() => createStepBuffers(-1, 1)).toThrow('tokens: must be an integer >= 0, got -1');
    expect(() => createStepBuffers(1, 0.5)).toThrow('rollouts: must be an integer >= 0, got 0.5');
    expect(() => createStepBuffers(2 ** 31, 1)).toThrow('exceed WebAssembly');
  });

  it('releaseStepBuffers: a released memory is reused zeroed, by a batch that fits, once', () => {
    const first = createStepBuffers(100_000, 8);
    first.logpTrain.fill(-1);
    first.logpInfer.fill(-2);
    first.offsets.fill(7);
    first.advantages.fill(0.5);
    first.tokenAdvantages.fill(0.25);
    releaseStepBuffers(first);
    expect(() => releaseStepBuffers(first)).toThrow('already released');
    const second = createStepBuffers(60_000, 4);
    const reused = second.logpTrain.buffer === first.logpTrain.buffer;
    // without WebAssembly SIMD the arrays are ordinary buffers, never pooled
    expect(reused).toBe(wasmSimdAvailable());
    const views = [second.logpTrain, second.logpInfer, second.offsets, second.advantages];
    for (const view of [...views, second.tokenAdvantages]) {
      expect(view.every((v) => v === 0)).toBe(true);
    }
    // the step math runs in place over the reused memory as over a fresh one
    const spec = { length: 15_000, mismatch: 0.04, special: null };
    const batch = buildBatch(
      [0.5, -0.5, 1, -1].map((advantage) => ({ ...spec, advantage })),
      3,
      5,
    );
    second.logpTrain.set(batch.logpTrain);
    second.logpInfer.set(batch.logpInfer);
    second.offsets.set(batch.offsets);
    second.advantages.set(batch.advantages);
    expect(stepRunsInPlace(second)).toBe(wasmSimdAvailable());
    expectAgreement(batch, stepTokenMath(second));
    // a batch the released memory does not hold gets a fresh one
    releaseStepBuffers(second);
    const bigger = createStepBuffers(200_000, 8);
    expect(bigger.logpTrain.buffer).not.toBe(first.logpTrain.buffer);
    expect(() => releaseStepBuffers({ ...bigger, logpTrain: new Float32Array(1) })).toThrow(
      'not made by createStepBuffers',
    );
    releaseStepBuffers(bigger);
  });

  it('stepTokenMathWasm: rejects a bad stageTokens', () => {
    const empty = new Float32Array(0);
    const batch = { logpTrain: empty, logpInfer: empty, offsets: Int32Array.of(0), advantages: [] };
    expect(() => stepTokenMathWasm(batch, 0)).toThrow('stageTokens');
  });
});
