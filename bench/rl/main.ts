// bench/rl: the per-step CPU math of a production-size GRPO batch (512 rollouts × 4096 tokens: IS
// ratios, KL, ratio statistics, rewards, advantages, per-token advantage scaling) through
// @anneal/rl, against (a) a straightforward implementation over arrays of objects and (b) the
// memory-bandwidth floor (bytes the step must touch / memcpy bandwidth), all measured in this run.
import { DEFAULT_REWARD_CONFIG, stepTokenMath } from '@anneal/rl';
import { baselineStep } from './baseline.ts';
import { crossCheck } from './check.ts';
import { fusedPassWithoutExp, streamingPass } from './diagnostics.ts';
import { generateStep, GROUP_SIZE, ROLLOUTS, toRecords, TOKENS_PER_ROLLOUT } from './data.ts';
import { medianMs, memcpyBandwidth, mib, peakRssMiB } from './measure.ts';
import { createBuffers, optimisedStep } from './optimised.ts';

const SEED = 1;
const FLOOR_TARGET = 3; // within 3× of the memory floor
const SPEEDUP_TARGET = 10; // at least 10× faster than the baseline
const config = DEFAULT_REWARD_CONFIG;

const verdict = (ok: boolean) => (ok ? 'meets target' : 'MISSES target');
const row = (label: string, value: string) => console.log(`${label.padEnd(40)}${value}`);

const step = generateStep(SEED);
const tokens = step.logpTrain.length;
console.log(
  `bench/rl: ${ROLLOUTS} rollouts × ${TOKENS_PER_ROLLOUT} tokens = ${tokens} tokens, groups of ${GROUP_SIZE}`,
);

const copyBytes = 64 * 2 ** 20;
const copy = memcpyBandwidth(copyBytes, 3, 9);
row(
  'memcpy bandwidth (read + write)',
  `${(copy.bytesPerMs / 1e6).toFixed(1)} GB/s (Float32Array.set, 2 × ${mib(copyBytes)} MiB)`,
);

// Bytes the step cannot avoid: read both logprob arrays, write the per-token advantages, plus the
// per-rollout inputs (offsets, outcome columns) and advantages.
const perRolloutBytes = 4 * (ROLLOUTS + 1) + 6 * 8 * ROLLOUTS + 8 * ROLLOUTS;
const bytesTouched = 3 * 4 * tokens + perRolloutBytes;
const floorMs = bytesTouched / copy.bytesPerMs;
row('bytes touched per step', `${mib(bytesTouched)} MiB`);
row('memory floor', `${floorMs.toFixed(2)} ms`);

const buffers = createBuffers(step);
const flatMs = medianMs(() => optimisedStep(step, config, SEED, buffers), 5, 15);
const tokenOnlyMs = medianMs(
  () =>
    stepTokenMath({ ...step, advantages: buffers.advantages }, 'sum', {
      tokenAdvantages: buffers.tokenAdvantages,
    }),
  3,
  15,
);
const scratch = new Float32Array(tokens);
const withoutExpMs = medianMs(() => fusedPassWithoutExp(step, scratch), 3, 15);
const streamingMs = medianMs(() => streamingPass(step, scratch), 3, 15);
const flatMetrics = optimisedStep(step, config, SEED, buffers);
const flatPeak = peakRssMiB();

const records = toRecords(step);
const baselineMs = medianMs(() => baselineStep(records, config, SEED), 1, 5);
const baselineResult = baselineStep(records, config, SEED);
const totalPeak = peakRssMiB();

const problems = crossCheck(flatMetrics, buffers, baselineResult);
if (problems.length > 0) {
  console.error(
    `cross-check FAILED: @anneal/rl and the baseline disagree:\n  ${problems.join('\n  ')}`,
  );
  process.exit(1);
}

const floorRatio = flatMs / floorMs;
const speedup = baselineMs / flatMs;
row(
  '@anneal/rl step (flat layout)',
  `${flatMs.toFixed(2)} ms (token math alone ${tokenOnlyMs.toFixed(2)} ms)`,
);
row('baseline (arrays of objects)', `${baselineMs.toFixed(1)} ms`);
row(
  '@anneal/rl vs memory floor',
  `${floorRatio.toFixed(2)}× the floor (target <= ${FLOOR_TARGET}×: ${verdict(floorRatio <= FLOOR_TARGET)})`,
);
row(
  '@anneal/rl vs baseline',
  `${speedup.toFixed(1)}× faster (target >= ${SPEEDUP_TARGET}×: ${verdict(speedup >= SPEEDUP_TARGET)})`,
);
row(
  '  diagnostic: same pass without exp',
  `${withoutExpMs.toFixed(2)} ms = ${(withoutExpMs / floorMs).toFixed(2)}× the floor`,
);
row(
  '  diagnostic: bare streaming loop',
  `${streamingMs.toFixed(2)} ms = ${(streamingMs / floorMs).toFixed(2)}× the floor`,
);
row(
  'peak RSS',
  `${flatPeak.toFixed(0)} MiB after the flat phase, ${totalPeak.toFixed(0)} MiB after the baseline`,
);
row(
  'results agree',
  `yes (k3 = ${flatMetrics.k3.toExponential(3)}, ratio mean ${flatMetrics.ratioMean.toFixed(6)})`,
);
console.log('(times are medians after warm-up; ms per step, single thread)');
