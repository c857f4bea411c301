// bench/rl: the per-step CPU math of a production-size GRPO batch (512 rollouts × 4096 tokens: IS
// ratios, KL, ratio statistics, rewards, advantages, per-token advantage scaling) through
// @anneal/rl — on its WebAssembly SIMD kernel (in place and staged) and on its scalar JavaScript
// reference — against (a) a straightforward implementation over arrays of objects and (b) the
// memory-bandwidth floor (bytes the step must touch / memcpy bandwidth), all measured in this run,
// round-robin, so that a loaded machine slows every candidate alike. Exits 1 only when an
// implementation disagrees with the baseline; targets print MET or MISSED.
import {
  stepTokenMath,
  stepTokenMathScalar,
  type RewardConfig,
  wasmSimdAvailable,
} from '@anneal/rl';
import { baselineStep } from './baseline.ts';
import { crossCheck, type Precision } from './check.ts';
import { generateStep, GROUP_SIZE, ROLLOUTS, toRecords, TOKENS_PER_ROLLOUT } from './data.ts';
import { fusedPassWithoutExp, streamingPass } from './diagnostics.ts';
import { copyRate, interleavedMedians, mib, peakRssMiB } from './measure.ts';
import {
  kernelArrays,
  optimisedStep,
  plainArrays,
  type StepArrays,
  type TokenMath,
} from './optimised.ts';

const SEED = 1;
const FLOOR_TARGET = 3; // within 3× of the memory floor
const SPEEDUP_TARGET = 10; // at least 10× faster than the baseline
const COPY_BYTES = 64 * 2 ** 20; // per buffer, far beyond the last-level cache
// The GRPO run spec's reward defaults (packages/protocol run-spec/grpo.ts).
const config: RewardConfig = {
  alphaWin: 1,
  alphaLose: 1,
  betaLose: 0.1,
  lambdaTool: 0.1,
  lambdaLen: 0.1,
  gate: true,
  normalizeStd: false,
};

const row = (label: string, value: string) => console.log(`${label.padEnd(42)}${value}`);

const simd = wasmSimdAvailable();
const step = generateStep(SEED);
const tokens = step.logpTrain.length;
console.log(
  `bench/rl: ${ROLLOUTS} rollouts × ${TOKENS_PER_ROLLOUT} tokens = ${tokens} tokens, groups of ${GROUP_SIZE}` +
    ` (WebAssembly SIMD: ${simd ? 'yes' : 'NO — the WASM rows run the scalar fallback'})`,
);

/** An @anneal/rl candidate: its arrays, its token math, and how precisely it must match. */
interface Candidate {
  label: string;
  arrays: StepArrays;
  math: TokenMath;
  precision: Precision;
}
const candidates: Record<'wasm' | 'staged' | 'scalar', Candidate> = {
  // the batch lives in WebAssembly memory (createStepBuffers): the kernel streams it in place
  wasm: {
    label: 'WASM kernel, in place',
    arrays: kernelArrays(step),
    math: stepTokenMath,
    precision: 'float32-kernel',
  },
  // ordinary typed arrays: stepTokenMath stages them through the kernel in L2-sized slices
  staged: {
    label: 'WASM kernel, staged',
    arrays: plainArrays(step),
    math: stepTokenMath,
    precision: 'float32-kernel',
  },
  scalar: {
    label: 'scalar JS (float64)',
    arrays: plainArrays(step),
    math: stepTokenMathScalar,
    precision: 'float64',
  },
};
const runStep = (c: Candidate) => optimisedStep(step, config, SEED, c.arrays, c.math);

// Phase 1: the flat layouts alone, for their peak memory.
const first = Object.fromEntries(
  Object.entries(candidates).map(([name, c]) => [name, runStep(c)]),
) as Record<keyof typeof candidates, ReturnType<typeof runStep>>;
const flatPeak = peakRssMiB();

// Phase 2: the baseline's objects, the cross-checks, then every candidate round-robin.
const records = toRecords(step);
const baselineResult = baselineStep(records, config, SEED);
let failed = false;
for (const [name, c] of Object.entries(candidates) as Array<[keyof typeof candidates, Candidate]>) {
  const problems = crossCheck(first[name], c.arrays, baselineResult, c.precision);
  if (problems.length > 0) {
    failed = true;
    console.error(
      `cross-check FAILED: ${c.label} and the baseline disagree:\n  ${problems.join('\n  ')}`,
    );
  }
}
if (failed) process.exit(1);

const copySource = new Float32Array(COPY_BYTES / 4).fill(1.5);
const copyTarget = new Float32Array(COPY_BYTES / 4);
const scratch = new Float32Array(tokens);
const wasm = candidates.wasm.arrays;
const ms = interleavedMedians(
  {
    memcpy: () => copyTarget.set(copySource),
    wasm: () => runStep(candidates.wasm),
    tokenMath: () => stepTokenMath(wasm),
    staged: () => runStep(candidates.staged),
    scalar: () => runStep(candidates.scalar),
    withoutExp: () => fusedPassWithoutExp(step, scratch),
    streaming: () => streamingPass(step, scratch),
    baseline: () => baselineStep(records, config, SEED),
  },
  new Set(['baseline']),
  7,
  3,
);
const totalPeak = peakRssMiB();

// Bytes the step cannot avoid: read both logprob arrays, write the per-token advantages, plus the
// per-rollout inputs (offsets, outcome columns) and advantages. (The step makes two passes: the
// per-token advantages are written before the trainer call, the logprobs read after it.)
const bandwidth = copyRate(COPY_BYTES, ms.memcpy!);
const perRolloutBytes = 4 * (ROLLOUTS + 1) + 6 * 8 * ROLLOUTS + 8 * ROLLOUTS;
const bytesTouched = 3 * 4 * tokens + perRolloutBytes;
const floorMs = bytesTouched / bandwidth;
const vsFloor = (t: number) => `${t.toFixed(2)} ms = ${(t / floorMs).toFixed(2)}× the floor`;
const verdict = (ok: boolean) => (ok ? 'MET' : 'MISSED');
const floorRatio = ms.wasm! / floorMs;
const speedup = ms.baseline! / ms.wasm!;

row(
  'memcpy bandwidth (read + write)',
  `${(bandwidth / 1e6).toFixed(1)} GB/s (Float32Array.set, 2 × ${mib(COPY_BYTES)} MiB)`,
);
row('bytes touched per step', `${mib(bytesTouched)} MiB`);
row('(b) memory floor', `${floorMs.toFixed(2)} ms`);
row(
  `@anneal/rl step, ${candidates.wasm.label}`,
  `${vsFloor(ms.wasm!)} (token math alone ${ms.tokenMath!.toFixed(2)} ms)`,
);
row(`@anneal/rl step, ${candidates.staged.label}`, vsFloor(ms.staged!));
row(`@anneal/rl step, ${candidates.scalar.label}`, vsFloor(ms.scalar!));
row('(a) baseline (arrays of objects)', `${ms.baseline!.toFixed(1)} ms`);
row(
  `target: <= ${FLOOR_TARGET}× the memory floor`,
  `${verdict(floorRatio <= FLOOR_TARGET)} (WASM in place ${floorRatio.toFixed(2)}×; staged ${(ms.staged! / floorMs).toFixed(2)}×; scalar ${(ms.scalar! / floorMs).toFixed(1)}×)`,
);
row(
  `target: >= ${SPEEDUP_TARGET}× faster than the baseline`,
  `${verdict(speedup >= SPEEDUP_TARGET)} (WASM in place ${speedup.toFixed(0)}×; staged ${(ms.baseline! / ms.staged!).toFixed(0)}×; scalar ${(ms.baseline! / ms.scalar!).toFixed(1)}×)`,
);
row('  diagnostic: scalar pass without exp', vsFloor(ms.withoutExp!));
row('  diagnostic: bare scalar streaming loop', vsFloor(ms.streaming!));
row(
  'peak RSS',
  `${flatPeak.toFixed(0)} MiB after the flat phase, ${totalPeak.toFixed(0)} MiB with the baseline`,
);
row(
  'results agree with the baseline',
  `yes (scalar to 1e-9; WASM within its float32 bounds: k3 ${first.wasm.k3.toExponential(4)} vs ${baselineResult.metrics.k3.toExponential(4)})`,
);
console.log('(medians of interleaved runs after warm-up; ms per step, single thread)');
