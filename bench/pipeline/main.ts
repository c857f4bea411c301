// bench/pipeline: GRPO step time against the engines' bound (docs/performance.md "Pipeline
// efficiency"). The real worker runs GRPO runs over REST and real HTTP against engines simulated
// at production proportions, scaled down 30× in time: fake vLLM replicas generating at a fixed
// rate (rollouts ≈ 2 s a step) and a fake SkyRL trainer whose forward_backward + optim_step +
// sampler export take 2 s. Sequential (rollout + train) and ideal (max(rollout, train)) step
// times come from the phase times of the lag-0 run in this run; the lag-1 run (rollouts of step
// t+1 generated while step t trains) is judged against the ideal, once probing every lagged step
// for the mismatch (rollout.probeEvery 1, the default) and once every `--probe-every` steps
// (default 4), whose step time is the mean over whole cycles of probed and unprobed steps.
// Targets print MET or MISSED.
import { parseArgs } from 'node:util';
import { GrpoSpec } from '@anneal/protocol';
import { type EngineShape, type RunTrace, startStack } from './stack.ts';

const TARGET = 1.1; // lag-1 step time within 10 % of the ideal
const STEPS = 6;
const STEADY_FROM = 2; // intervals between commits of steps 2..STEPS (step 1 fills the pipeline)
const GROUP_SIZE = 8;
// 256 policy rollouts a step: the mismatch probe's floor (MIN_PROBE_ROLLOUTS, 32) is then 1/8 of
// the batch, its default `probeFraction` — a production batch's proportion. With 8 prompts the
// floor was half the batch and its forward alone cost 12–14 % of the step (docs/performance.md).
const PROMPTS_PER_REPLICA = 32;
const MAX_TOKENS = 256;
/** Tokens of a rollout the sampler did not generate but the trainer runs (prompt, tool results):
 * 196 on average for search-qa under the bench's tokenizer (measured from this bench's lag-0
 * train phase at 64 generated tokens). The trainer's per-token cost counts them. */
const UNGENERATED_TOKENS = 196;
const TIME_SCALE = 30; // production seconds per bench second
/** forward_backward of a step's policy batch (every token it trains on), optim_step, export. */
const FORWARD_BACKWARD_MS = 1500;
const TRAINER_LATENCY_MS = {
  optim_step: 300,
  save_weights_for_sampler: 200,
  // A lagged step whose probe is not in when forward_backward returns scores it on a copy of the
  // trained weights (the worker's probe-weights.ts): a save and a load. Charged by bytes moved,
  // from SkyRL JAX@a9564572: the export writes the adapter twice (safetensors, then an
  // uncompressed tar: skyrl/tx/utils/models.py save_lora_checkpoint, skyrl/utils/storage.py
  // compresslevel=0), 100 ms an adapter; a training save writes the adapter and both Adam moments
  // (skyrl/backends/jax.py _extract_checkpoint_data), three; a load reads all three back
  // (load_checkpoint restores the whole target, the optimizer's part too, then drops it).
  save_weights: 300,
  load_weights: 300,
};

/** `--soak`: exit 1 when a step takes more than this many times its same-run baseline (lag 0:
 * rollout + train; lag 1: max(rollout, train)), e.g. a probe or a phase put on the critical
 * path again. */
const REGRESSION_BOUND = 2;

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '1' },
    soak: { type: 'boolean', default: false },
    // the fakes' rollout time per step (production ~60 s, scaled down); 2 balances the trainer's
    // 2 s, more makes the pipeline rollout-bound (agentic rollouts usually outlast training)
    'rollout-seconds': { type: 'string', default: '2' },
    // the endpoint's maxInFlight; default: sized to a lagged step (below)
    'max-in-flight': { type: 'string' },
    // rollout.probeEvery of the second lag-1 run (the first probes every lagged step, the default)
    'probe-every': { type: 'string', default: '4' },
  },
});
const PROBE_EVERY = Number(values['probe-every']);
if (!Number.isInteger(PROBE_EVERY) || PROBE_EVERY < 2)
  throw new Error('--probe-every: an integer >= 2');
const ROLLOUT_SECONDS = Number(values['rollout-seconds']);
if (!(ROLLOUT_SECONDS > 0)) throw new Error('--rollout-seconds: a number > 0');
const replicas = Number(values.replicas);
if (!Number.isInteger(replicas) || replicas < 1) throw new Error('--replicas: an integer >= 1');

const promptsPerStep = PROMPTS_PER_REPLICA * replicas;
// Policy and reference rollouts (reference.cacheGenerations false: both every step), each
// MAX_TOKENS long (the fakes never stop early).
const tokensPerStep = 2 * promptsPerStep * GROUP_SIZE * MAX_TOKENS;
// vLLM decodes every running sequence a token per step (continuous batching): a rollout of
// MAX_TOKENS takes ROLLOUT_SECONDS however many run beside it, and a small request (the
// mismatch probe's) is not queued behind a batch's.
const shape: EngineShape = {
  replicas,
  tokensPerSecond: 0,
  decodeTokensPerSecond: MAX_TOKENS / ROLLOUT_SECONDS,
  trainerLatencyMs: TRAINER_LATENCY_MS,
  maxModelLen: 4096,
  // The run's models (the policy, the probe's copy) share the trainer's GPUs: one queue.
  sharedTrainer: true,
  // Requests the worker keeps in flight, sized to what a lagged step has at once: the next
  // batch's policy and reference groups (one request each) and the probe's rollouts (one each,
  // n = 1). At the default 64 a replica the probe's 32 requests wait for the batch's 64 to
  // finish — a second wave of decode (docs/operations.md "Sizing maxInFlight").
  maxInFlight:
    values['max-in-flight'] === undefined
      ? 2 * (2 * PROMPTS_PER_REPLICA + 32) * replicas
      : Number(values['max-in-flight']),
};
// forward and forward_backward cost their tokens plus SkyRL's fixed cost of a call (its engine
// polls for pending requests every 100 ms, skyrl-tx/tx/tinker/engine.py@009abdce), scaled like
// the rest: the mismatch probe's small forward then costs what it should, not a batch's. A
// forward is a third of a forward_backward per token (≈ 2N of the 6N training FLOPs per token,
// Kaplan et al. 2020, arXiv:2001.08361 §2.1).
const batchTokens = promptsPerStep * GROUP_SIZE * (MAX_TOKENS + UNGENERATED_TOKENS);
const fbMsPerToken = FORWARD_BACKWARD_MS / batchTokens;
shape.trainerTokenLatency = {
  callMs: 100 / TIME_SCALE,
  msPerToken: { forward_backward: fbMsPerToken, forward: fbMsPerToken / 3 },
};
const rolloutFields = GrpoSpec.properties.rollout.properties;
const lagAvailable = Object.hasOwn(rolloutFields, 'maxPolicyLag');
const probeEveryAvailable = Object.hasOwn(rolloutFields, 'probeEvery');

/** Steps after STEADY_FROM a `probeEvery` run is measured over: whole cycles of probed and
 * unprobed steps, at least STEPS − STEADY_FROM. */
const cycleSteps = (probeEvery: number) =>
  probeEvery * Math.ceil((STEPS - STEADY_FROM) / probeEvery);

/** The run's spec; `probeEvery` > 1 runs the measured cycles and one step more, whose commit
 * (after the run's final checkpoint) is left out of the mean. */
const spec = (lag: number, probeEvery = 1) => {
  const steps = probeEvery > 1 ? STEADY_FROM + cycleSteps(probeEvery) + 1 : STEPS;
  return `kind: grpo
steps: ${steps}
checkpointInterval: ${steps}
lora: { rank: 8 }
rollout: { groupSize: ${GROUP_SIZE}, promptsPerStep: ${promptsPerStep}, maxTokens: ${MAX_TOKENS}${lagAvailable ? `, maxPolicyLag: ${lag}` : ''}${probeEvery > 1 ? `, probeEvery: ${probeEvery}` : ''} }
reference: { cacheGenerations: false }
data: { mix: [{ source: search-qa, weight: 1 }] }
`;
};

const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const steadyCommits = (trace: RunTrace) =>
  trace.steps.filter((t) => t.step >= STEADY_FROM).map((t) => t.atMs);
/** Median seconds between consecutive step commits from step STEADY_FROM on. */
const stepSeconds = (trace: RunTrace) => {
  const commits = steadyCommits(trace);
  return median(commits.slice(1).map((at, i) => (at - commits[i]!) / 1000));
};
/** Mean seconds a step over `cycles` steps from step STEADY_FROM's commit: over whole probe
 * cycles, the probed and unprobed steps in their proportion (a median would pick one kind). */
const meanStepSeconds = (trace: RunTrace, cycles: number) => {
  const commits = steadyCommits(trace);
  return (commits[cycles]! - commits[0]!) / 1000 / cycles;
};
const phase = (trace: RunTrace, name: string) =>
  median(trace.steps.map((s) => s.metrics[`phase_seconds/${name}`] ?? 0));
const metric = (trace: RunTrace, key: string) =>
  median(trace.steps.filter((t) => t.step >= STEADY_FROM).map((t) => t.metrics[key] ?? 0));
const busy = (trace: RunTrace) =>
  `trainer busy ${(metric(trace, 'busy_fraction/trainer') * 100).toFixed(0)} %, ` +
  `sampler busy ${(metric(trace, 'busy_fraction/sampler') * 100).toFixed(0)} %, ` +
  `policy lag ${metric(trace, 'policy_lag/mean').toFixed(2)}`;
const row = (label: string, value: string) => console.log(`${label.padEnd(46)}${value}`);
const s = (seconds: number) => `${seconds.toFixed(2)} s`;
const verdict = (ok: boolean) => (ok ? 'MET' : 'MISSED');

console.log(
  `bench/pipeline: ${replicas} vLLM replica(s), each sequence ${shape.decodeTokensPerSecond} tokens/s, ` +
    `${promptsPerStep} prompts × ${GROUP_SIZE} rollouts × ${MAX_TOKENS} tokens (policy + reference), ` +
    `trainer forward_backward ${(fbMsPerToken * 1000).toFixed(1)} µs/token (the batch's ` +
    `${FORWARD_BACKWARD_MS} ms), forward a third of it, ${shape.trainerTokenLatency.callMs.toFixed(1)} ms a call, ` +
    `${Object.entries(TRAINER_LATENCY_MS)
      .map(([op, ms]) => `${op} ${ms} ms`)
      .join(' + ')}; maxInFlight ${shape.maxInFlight}; ${STEPS} steps per run`,
);
const stack = await startStack(shape);
try {
  const lag0 = await stack.run(spec(0));
  const rollout = phase(lag0, 'rollout');
  const train = phase(lag0, 'train') + phase(lag0, 'weight_sync');
  const sequential = rollout + train;
  const ideal = Math.max(rollout, train);
  const step0 = stepSeconds(lag0);
  const engineRollout = (1 + MAX_TOKENS) / shape.decodeTokensPerSecond!;
  const engineTrain =
    (FORWARD_BACKWARD_MS +
      TRAINER_LATENCY_MS.optim_step +
      TRAINER_LATENCY_MS.save_weights_for_sampler) /
    1000;
  row(
    'engine time per step (configured)',
    `rollout ${s(engineRollout)}, train + weight sync ${s(engineTrain)} (${tokensPerStep} tokens)`,
  );
  row(
    'lag 0 phases (median)',
    `rollout ${s(rollout)}, train ${s(phase(lag0, 'train'))} + weight sync ` +
      `${s(phase(lag0, 'weight_sync'))}, reward ${s(phase(lag0, 'reward'))}`,
  );
  row('sequential = rollout + train', s(sequential));
  row('ideal = max(rollout, train)', s(ideal));
  row(
    'lag 0 step time (median, steady state)',
    `${s(step0)} = ${(step0 / sequential).toFixed(3)}× sequential, ${(step0 / ideal).toFixed(2)}× ideal`,
  );
  if (lagAvailable) row('  lag 0', busy(lag0));
  const bounded = (label: string, ratio: number) => {
    if (!values.soak) return;
    const ok = ratio <= REGRESSION_BOUND;
    row(
      `regression bound: ${label} ≤ ${REGRESSION_BOUND}×`,
      `${verdict(ok)} (${ratio.toFixed(3)}×)`,
    );
    if (!ok) process.exitCode = 1;
  };
  bounded('lag 0 ÷ sequential', step0 / sequential);
  if (lagAvailable) {
    const lag1 = await stack.run(spec(1));
    const step1 = stepSeconds(lag1);
    const ratio = step1 / ideal;
    row(
      'lag 1 step time (median, steady state)',
      `${s(step1)} = ${ratio.toFixed(3)}× ideal, ${(step1 / sequential).toFixed(2)}× sequential`,
    );
    row('  lag 1', busy(lag1));
    bounded('lag 1 ÷ ideal', ratio);
    row(
      '  lag 1 phases (median)',
      `rollout ${s(phase(lag1, 'rollout'))}, train ${s(phase(lag1, 'train'))} + weight sync ` +
        `${s(phase(lag1, 'weight_sync'))}, then waits ${s(phase(lag1, 'probe'))} for its mismatch probe`,
    );
    row(
      `target: lag 1 within ${((TARGET - 1) * 100).toFixed(0)}% of the ideal`,
      `${verdict(ratio <= TARGET)} (${ratio.toFixed(3)}×; lag 1 is ${(step0 / step1).toFixed(2)}× faster than lag 0; ` +
        `${(step1 / Math.max(engineRollout, engineTrain)).toFixed(2)}× the engines' own bound)`,
    );
    if (probeEveryAvailable) {
      const sparse = await stack.run(spec(1, PROBE_EVERY));
      const stepK = meanStepSeconds(sparse, cycleSteps(PROBE_EVERY));
      const everyStep = meanStepSeconds(lag1, STEPS - STEADY_FROM);
      const ratioK = stepK / ideal;
      row(
        `lag 1, probeEvery ${PROBE_EVERY} (mean, steady state)`,
        `${s(stepK)} = ${ratioK.toFixed(3)}× ideal, ${(stepK / sequential).toFixed(2)}× sequential ` +
          `(probe every step, the mean as above: ${s(everyStep)} = ${(everyStep / ideal).toFixed(3)}×, its last step checkpointing)`,
      );
      row(`  lag 1, probeEvery ${PROBE_EVERY}`, busy(sparse));
      bounded(`lag 1 probeEvery ${PROBE_EVERY} ÷ ideal`, ratioK);
      row(
        `target: lag 1 within ${((TARGET - 1) * 100).toFixed(0)}%, probeEvery ${PROBE_EVERY}`,
        `${verdict(ratioK <= TARGET)} (${ratioK.toFixed(3)}×; ${(step0 / stepK).toFixed(2)}× faster than lag 0; ` +
          `mismatch_kl at ${sparse.steps.filter((t) => t.metrics['mismatch_kl/tokens']).length} of ${sparse.steps.length} steps)`,
      );
    }
  } else {
    row('lag 1 step time', 'not available (this build has no rollout.maxPolicyLag)');
    row(`target: lag 1 within ${((TARGET - 1) * 100).toFixed(0)}% of the ideal`, 'not available');
  }
  console.log(
    `(median seconds between step commits, steps ${STEADY_FROM}..${STEPS}; probeEvery runs: the mean over whole cycles; phases from the step records)`,
  );
} finally {
  await stack.close();
}
