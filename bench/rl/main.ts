// bench/rl: the per-step CPU math of a production-size GRPO batch (512 rollouts × 4096 tokens: IS
// ratios, KL, ratio statistics, rewards, advantages, per-token advantage scaling) through
// @anneal/rl, against (a) a straightforward implementation over arrays of objects and (b) the
// memory-bandwidth floor (bytes the step must touch / memcpy bandwidth), all measured in this run,
// round-robin, so that a loaded machine slows every candidate alike.
import { DEFAULT_REWARD_CONFIG, stepTokenMath } from '@anneal/rl';
import { baselineStep } from './baseline.ts';
import { crossCheck } from './check.ts';
import { generateStep, GROUP_SIZE, ROLLOUTS, toRecords, TOKENS_PER_ROLLOUT } from './data.ts';
import { fusedPassWithoutExp, streamingPass } from './diagnostics.ts';
import { copyRate, interleavedMedians, mib, peakRssMiB } from './measure.ts';
import { createBuffers, optimisedStep } from './optimised.ts';

const SEED = 1;
const FLOOR_TARGET = 3; // within 3× of the memory floor
const SPEEDUP_TARGET = 10; // at least 10× faster than the baseline
const COPY_BYTES = 64 * 2 ** 20; // per buffer, far beyond the last-level cache
const config = DEFAULT_REWARD_CONFIG;

const verdict = (ok: boolean) => (ok ? 'meets target' : 'MISSES target');
const row = (label: string, value: string) => console.log(`${label.padEnd(40)}${value}`);

const step = generateStep(SEED);
const tokens = step.logpTrain.length;
console.log(
  `bench/rl: ${ROLLOUTS} rollouts × ${TOKENS_PER_ROLLOUT} tokens = ${tokens} tokens, groups of ${GROUP_SIZE}`,
);

// Phase 1: the flat layout alone, for its peak memory.
const buffers = createBuffers(step);
const flatMetrics = optimisedStep(step, config, SEED, buffers);
const flatPeak = peakRssMiB();

// Phase 2: the baseline's objects, a cross-check, then every candidate round-robin.
const records = toRecords(step);
const baselineResult = baselineStep(records, config, SEED);
const problems = crossCheck(flatMetrics, buffers, baselineResult);
if (problems.length > 0) {
  console.error(
    `cross-check FAILED: @anneal/rl and the baseline disagree:\n  ${problems.join('\n  ')}`,
  );
  process.exit(1);
}
const copySource = new Float32Array(COPY_BYTES / 4).fill(1.5);
const copyTarget = new Float32Array(COPY_BYTES / 4);
const scratch = new Float32Array(tokens);
const ms = interleavedMedians(
  {
    memcpy: () => copyTarget.set(copySource),
    flat: () => optimisedStep(step, config, SEED, buffers),
    tokenMath: () =>
      stepTokenMath({ ...step, advantages: buffers.advantages }, 'sum', {
        tokenAdvantages: buffers.tokenAdvantages,
      }),
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
// per-rollout inputs (offsets, outcome columns) and advantages.
const bandwidth = copyRate(COPY_BYTES, ms.memcpy!);
const perRolloutBytes = 4 * (ROLLOUTS + 1) + 6 * 8 * ROLLOUTS + 8 * ROLLOUTS;
const bytesTouched = 3 * 4 * tokens + perRolloutBytes;
const floorMs = bytesTouched / bandwidth;
const flatMs = ms.flat!;
const floorRatio = flatMs / floorMs;
const speedup = ms.baseline! / flatMs;
const vsFloor = (t: number) => `${t.toFixed(2)} ms = ${(t / floorMs).toFixed(2)}× the floor`;

row(
  'memcpy bandwidth (read + write)',
  `${(bandwidth / 1e6).toFixed(1)} GB/s (Float32Array.set, 2 × ${mib(COPY_BYTES)} MiB)`,
);
row('bytes touched per step', `${mib(bytesTouched)} MiB`);
row('memory floor', `${floorMs.toFixed(2)} ms`);
row(
  '@anneal/rl step (flat layout)',
  `${flatMs.toFixed(2)} ms (token math alone ${ms.tokenMath!.toFixed(2)} ms)`,
);
row('baseline (arrays of objects)', `${ms.baseline!.toFixed(1)} ms`);
row(
  '@anneal/rl vs memory floor',
  `${floorRatio.toFixed(2)}× the floor (target <= ${FLOOR_TARGET}×: ${verdict(floorRatio <= FLOOR_TARGET)})`,
);
row(
  '@anneal/rl vs baseline',
  `${speedup.toFixed(1)}× faster (target >= ${SPEEDUP_TARGET}×: ${verdict(speedup >= SPEEDUP_TARGET)})`,
);
row('  diagnostic: same pass without exp', vsFloor(ms.withoutExp!));
row('  diagnostic: bare streaming loop', vsFloor(ms.streaming!));
row(
  'peak RSS',
  `${flatPeak.toFixed(0)} MiB after the flat phase, ${totalPeak.toFixed(0)} MiB with the baseline`,
);
row(
  'results agree',
  `yes (k3 = ${flatMetrics.k3.toExponential(3)}, ratio mean ${flatMetrics.ratioMean.toFixed(6)})`,
);
console.log('(medians of interleaved runs after warm-up; ms per step, single thread)');
