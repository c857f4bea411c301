// bench/fleet-share: K GRPO runs sharing one vLLM fleet and one trainer (docs/performance.md
// "Sharing a fleet"). The production path of bench/pipeline (the real worker taking runs from
// the real control plane over REST and BullMQ, admission by adapter demand in the start script,
// real HTTP to the engines) with K = 1, 2, 4, 8 runs submitted at once, twice: with capacity
// admission (the endpoint's `maxLoras` allocated to runs) and oversubscribed (every run admitted;
// vLLM's batch slots and CPU LRU decide). The fakes compute what decides throughput under
// sharing: continuous batching whose step grows with the batch, `--max-loras` adapters per batch
// (other adapters' requests wait), the CPU LRU (`--max-cpu-loras`) with re-reads that stall the
// batch, and one trainer whose compute all runs share (`--trainer-per-run`: a compute queue per
// run's model, to see the inference side alone). Prints one row per (mode, K); `--soak`
// runs K = 8 only and exits 1 past its bounds. `--weights 3,1` instead runs one run per weight,
// each in a tenant of that weight, on an endpoint declaring `maxNumSeqs` (`--max-num-seqs`, the
// fakes' `--max-num-seqs`) that they saturate, and prints each run's share of the tokens served
// while all of them were sampling against weight ÷ the sum of weights (MET within ±10 %).
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type EngineShape, type FleetStats, type RunTrace, startStack } from '../pipeline/stack.ts';
import {
  contendedWindow,
  fleetRow,
  type FleetRow,
  printRows,
  printWeightedShares,
  type RunTimes,
  soakVerdicts,
  weightedShares,
} from './report.ts';

const STEPS = 4;
const GROUP_SIZE = 8;
const PROMPTS = 8;
const MAX_TOKENS = 128;
const LAG = 1;
// Production proportions, scaled (docs/performance.md "Sharing a fleet"): Qwen3-8B in
// bf16 on an H100, ~1k-token contexts. A decode step reads the weights once (16 GB at 3.35 TB/s
// ≈ 5 ms, ~6 ms with the rest of the step) and each running sequence adds its KV reads (~150 MB
// at 1k tokens ≈ 0.045 ms) and its FLOPs (16 GFLOP at ~650 TFLOP/s ≈ 0.025 ms): 6 ms + 0.07 ms a
// sequence, so a solo run's 128 sequences split a step 6 : 9. Time is scaled so that a solo
// run's rollout (1 + 128 steps) takes 1 s, keeping that split: 7.75 ms a step at 128 sequences.
const SOLO_BATCH = 2 * PROMPTS * GROUP_SIZE; // policy + reference rollouts of one step
const STEP_AT_SOLO_MS = 1000 / (1 + MAX_TOKENS);
const STEP_BASE_MS = (STEP_AT_SOLO_MS * 6) / 15;
const STEP_PER_SEQUENCE_MS = (STEP_AT_SOLO_MS * 9) / 15 / SOLO_BATCH;
const TIME_SCALE = 15 / STEP_AT_SOLO_MS; // production ms per bench ms
// A rank-16 adapter of every linear module of Qwen3-8B: 43.6 M parameters, 87 MB in bf16; read
// (safetensors on CPU, vllm/lora/worker_manager.py@0030b9ff `_load_adapter`) at 1 GB/s — a
// parameter, not a measurement: local NVMe is faster, network storage slower.
const ADAPTER_READ_MS = 87 / TIME_SCALE;
// The trainer: forward_backward of a solo step's policy batch 0.75 s (in proportion to tokens,
// plus SkyRL's 100 ms polling scaled), optim_step 0.15 s, sampler export 0.1 s; one compute
// queue for every run's model (one SkyRL engine on one mesh).
const FORWARD_BACKWARD_MS = 750;
const batchTokens = PROMPTS * GROUP_SIZE * MAX_TOKENS;

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '1' },
    'max-loras': { type: 'string' },
    'max-cpu-loras': { type: 'string' },
    'max-in-flight': { type: 'string', default: '256' },
    ks: { type: 'string', default: '1,2,4,8' },
    soak: { type: 'boolean', default: false },
    'trainer-per-run': { type: 'boolean', default: false },
    weights: { type: 'string' },
    'max-num-seqs': { type: 'string', default: '32' },
  },
});
const integer = (flag: string, text: string) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${flag}: an integer >= 1`);
  return value;
};
const replicas = integer('replicas', values.replicas);
// `--weights`: every run's demand of 4 adapter slots (reference + 2 policy versions at lag 1 +
// a sync) fits by default, so that all runs are admitted and sample at once.
const weightCount = values.weights?.split(',').length;
const defaultLoras = String(weightCount ? 4 * weightCount : 8);
const maxLoras = integer('max-loras', values['max-loras'] ?? defaultLoras);
const maxCpuLoras = integer('max-cpu-loras', values['max-cpu-loras'] ?? defaultLoras);
const maxInFlight = integer('max-in-flight', values['max-in-flight']);
const ks = values.soak ? [8] : values.ks.split(',').map((k) => integer('ks', k));
const weights = values.weights?.split(',').map((w) => {
  const weight = Number(w);
  if (!(weight > 0)) throw new Error('--weights: numbers > 0, comma-separated');
  return weight;
});
const maxNumSeqs = integer('max-num-seqs', values['max-num-seqs']);
/** `--weights`: a run's share within this much of weight ÷ the sum of weights (relative). */
const SHARE_TOLERANCE = 0.1;

const spec = (label: string, steps = STEPS) => `kind: grpo
name: ${label}
steps: ${steps}
checkpointInterval: ${steps}
lora: { rank: 8 }
rollout: { groupSize: ${GROUP_SIZE}, promptsPerStep: ${PROMPTS}, maxTokens: ${MAX_TOKENS}, maxPolicyLag: ${LAG} }
reference: { cacheGenerations: false }
data: { mix: [{ source: search-qa, weight: 1 }] }
`;

const shape = (oversubscribe: boolean): EngineShape => ({
  replicas,
  tokensPerSecond: 0,
  batching: { stepBaseMs: STEP_BASE_MS, stepPerSequenceMs: STEP_PER_SEQUENCE_MS },
  adapterReadMs: ADAPTER_READ_MS,
  maxLoras,
  maxCpuLoras,
  oversubscribe,
  sharedTrainer: !values['trainer-per-run'],
  slots: Math.max(...ks),
  maxInFlight: maxInFlight * replicas,
  trainerLatencyMs: { optim_step: 150, save_weights_for_sampler: 100 },
  trainerTokenLatency: {
    callMs: 100 / 30,
    msPerToken: {
      forward_backward: FORWARD_BACKWARD_MS / batchTokens,
      forward: FORWARD_BACKWARD_MS / batchTokens / 3,
    },
  },
  maxModelLen: 4096,
  ...(weights && { maxNumSeqs, tenantWeights: weights, slots: weights.length }),
});

console.log(
  `bench/fleet-share: ${replicas} vLLM replica(s), --max-loras ${maxLoras}, --max-cpu-loras ` +
    `${maxCpuLoras}, maxInFlight ${maxInFlight * replicas}; a step ${STEP_BASE_MS.toFixed(2)} ms + ` +
    `${(STEP_PER_SEQUENCE_MS * 1000).toFixed(1)} µs a running sequence (1 bench ms = ` +
    `${TIME_SCALE.toFixed(2)} production ms), adapter read ${ADAPTER_READ_MS.toFixed(1)} ms; ` +
    `each run ${STEPS} steps of ${PROMPTS} prompts × ${GROUP_SIZE} × ${MAX_TOKENS} tokens ` +
    `(policy + reference), maxPolicyLag ${LAG}; one trainer, forward_backward ` +
    `${FORWARD_BACKWARD_MS} ms a run's batch + optim_step 150 ms + export 100 ms, ` +
    (values['trainer-per-run'] ? 'a compute queue per run' : 'one compute queue for all runs'),
);

if (weights) {
  await weightedRound(weights);
} else {
  await rounds();
}

async function rounds(): Promise<void> {
  const rows: FleetRow[] = [];
  let soloTokensPerSecond: number | undefined;
  for (const oversubscribe of [false, true]) {
    const stack = await startStack(shape(oversubscribe));
    try {
      // A first run on a fresh stack also pays the worker's one-off set-up (engines, tokenizer):
      // one step, not reported, so that K = 1 is a run like the others.
      await stack.run(spec('share-warm-up', 1));
      for (const k of ks) {
        await stack.fleet(true);
        const settled = await Promise.allSettled(
          Array.from({ length: k }, (_, i) => stack.run(spec(`share-k${k}-${i}`))),
        );
        const traces = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
        const failures = settled.flatMap((s) =>
          s.status === 'rejected' ? [String((s.reason as Error).message ?? s.reason)] : [],
        );
        const fleet = await namesSettled(stack.fleet.bind(stack));
        const times = await Promise.all(traces.map((t) => runTimes(t, stack.get.bind(stack))));
        const row = fleetRow({
          mode: oversubscribe ? 'oversubscribed' : 'admitted',
          k,
          traces,
          failures,
          times,
          fleet,
          soloTokensPerSecond,
        });
        if (k === 1 && !oversubscribe) soloTokensPerSecond = row.tokensPerSecond;
        rows.push(row);
        printRows([row], rows.length === 1);
      }
    } finally {
      await stack.close();
    }
  }
  console.log('');
  printRows(rows, true);
  if (values.soak) {
    const ok = soakVerdicts(rows);
    if (!ok) process.exitCode = 1;
  }
}

/** One run per weight, each in its own tenant of that weight, submitted at once (admitted: the
 * endpoint's `maxLoras` holds every run's adapters), on an endpoint declaring `maxNumSeqs`. */
async function weightedRound(runWeights: readonly number[]): Promise<void> {
  const seqs = maxNumSeqs * replicas;
  console.log(
    `--weights ${runWeights.join(':')}: ${runWeights.length} runs, run i in tenant t<i> of weight ` +
      `w<i>; endpoint maxNumSeqs ${maxNumSeqs} × ${replicas} replica(s) = ${seqs} sequences ` +
      `(a run's step asks for ${SOLO_BATCH}).`,
  );
  const stack = await startStack(shape(false));
  try {
    await stack.run(spec('share-warm-up', 1));
    await stack.fleet(true);
    const settled = await Promise.allSettled(
      runWeights.map((_, i) => stack.run(spec(`share-w${i}`), undefined, i)),
    );
    const failed = settled.flatMap((s) =>
      s.status === 'rejected' ? [String((s.reason as Error).message ?? s.reason)] : [],
    );
    if (failed.length > 0) throw new Error(`--weights: runs failed: ${failed.join('; ')}`);
    const traces = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const ids = traces.map((t) => t.runId);
    const records = await Promise.all(ids.map((id, i) => stack.get(`/v1/runs/${id}`, i)));
    // Each run is alone in its tenant, so its shared reference (its scoring rollouts) is its own.
    const owner = new Map(ids.map((id) => [id, id]));
    records.forEach((record, i) => {
      const demand = (record['adapterDemand'] ?? []) as Array<{ reference?: string }>;
      for (const d of demand) if (d.reference) owner.set(d.reference, ids[i]!);
    });
    const fleet = await stack.fleet();
    const served = fleet.served.flatMap(([name, ...rest]): FleetStats['served'] => {
      const run = owner.get(name);
      return run === undefined ? [] : [[run, ...rest]];
    });
    const window = contendedWindow(ids, served);
    const span =
      (Math.max(...served.map((s) => s[2])) - Math.min(...served.map((s) => s[3]))) / 1000;
    const inside = window.reduce((sum, [from, to]) => sum + to - from, 0) / 1000;
    console.log(
      `window: the instants at which every run had a completion at the fake (arrived, not yet ` +
        `answered) — under the fair share a run that wants capacity always has one, a run ` +
        `between rollouts (training) has none; ${inside.toFixed(1)} s in ${window.length} ` +
        `piece(s) of the ${span.toFixed(1)} s the runs sampled. A completion's tokens are spread ` +
        `evenly over its time at the fake and counted by the part inside the window.`,
    );
    if (window.length === 0) {
      throw new Error('--weights: the runs never sampled at once (is --max-loras ≥ 4 × runs?)');
    }
    const shares = weightedShares(
      ids.map((runId, i) => ({ runId, weight: runWeights[i]!, record: records[i]! })),
      served,
      window,
    );
    const ok = printWeightedShares(shares, SHARE_TOLERANCE);
    console.log(
      `load average: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    if (!ok) process.exitCode = 1;
  } finally {
    await stack.close();
  }
}

/** The fleet's stats once the runs' adapters are unloaded (a run's unloads follow its end by
 * at most a few requests), or after 10 s with what is still listed: leaked names. */
async function namesSettled(fleet: () => Promise<FleetStats>): Promise<FleetStats> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const stats = await fleet();
    if (stats.listed.every((names) => names.length === 0) || Date.now() > deadline) return stats;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function runTimes(
  trace: RunTrace,
  get: (url: string) => Promise<Record<string, unknown>>,
): Promise<RunTimes> {
  const run = await get(`/v1/runs/${trace.runId}`);
  const ms = (field: string) => Date.parse(String(run[field]));
  const demand = (run['adapterDemand'] as Array<{ role: string; slots: number }> | undefined)
    ?.filter((d) => d.role === 'inference')
    .reduce((sum, d) => sum + d.slots, 0);
  return {
    id: trace.runId,
    createdMs: ms('createdAt'),
    startedMs: ms('startedAt'),
    endedMs: ms('endedAt'),
    demand: demand ?? 0,
  };
}
