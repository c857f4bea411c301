// bench/embedded: throughput of the embedded engines at the default model size (2 layers,
// d_model 64, 4 heads, context 256) and the train–inference mismatch between them.
//   trainer: forward+backward tokens/s, 1 compute thread (baseline) vs 2 (batch split)
//   sampler: generated tokens/s, unbatched n=1 requests (baseline) vs n=8 batches, 1 vs 2 workers
//   mismatch: k1/k3 KL and max |Δlogp| between onnxruntime's sampling logprobs and the
//             TypeScript trainer's logprobs on the same sampled tokens (docs/recipe.md §2)
// Candidates run round-robin so a loaded machine slows each alike; compare the ratios.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Datum } from '@anneal/engines';
import { DEFAULT_BASE_MODEL, EmbeddedInferenceEngine, EmbeddedTrainer } from '@anneal/engines';

const SEQUENCES = 16; // per forward_backward batch
const SEQ_LEN = 192; // tokens per sequence
const PROMPTS = 8; // concurrent sample requests
const SAMPLES = 8; // n per prompt
const MAX_TOKENS = 96;
const REPEATS = 3;

let state = 12345;
const nextByte = () => {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  return 32 + ((state >>> 16) % 95);
};
const text = (n: number) => Array.from({ length: n }, nextByte);

function sftBatch(): Datum[] {
  return Array.from({ length: SEQUENCES }, () => {
    const tokens = text(SEQ_LEN + 1);
    return {
      modelInput: tokens.slice(0, -1),
      lossFnInputs: {
        target_tokens: Int32Array.from(tokens.slice(1)),
        weights: new Float32Array(SEQ_LEN).fill(1),
      },
    };
  });
}

async function median(run: () => Promise<number>): Promise<number> {
  const values: number[] = [];
  for (let i = 0; i < REPEATS; i++) values.push(await run());
  return values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

const row = (label: string, value: string) => console.log(`${label.padEnd(52)}${value}`);
const fmt = (x: number) => x.toFixed(0).padStart(7);

const dir = await mkdtemp(path.join(tmpdir(), 'anneal-bench-embedded-'));
const trainers = [1, 2].map((threads) => new EmbeddedTrainer({ artifactDir: dir, threads }));
try {
  console.log(`bench/embedded: default model, ${SEQUENCES} × ${SEQ_LEN} tokens per training batch`);
  const models = await Promise.all(
    trainers.map((t) => t.createModel({ baseModel: DEFAULT_BASE_MODEL, loraRank: 1, seed: 1 })),
  );
  const batch = sftBatch();
  const tokens = SEQUENCES * SEQ_LEN;
  for (const m of models) await m.forwardBackward(batch, 'cross_entropy'); // warm-up
  const fb = [0, 0];
  const fwd = [0, 0];
  for (let r = 0; r < REPEATS; r++) {
    for (const i of [0, 1]) {
      fb[i]! += await timed(() => models[i]!.forwardBackward(batch, 'cross_entropy'));
      fwd[i]! += await timed(() => models[i]!.forward(batch, 'cross_entropy'));
    }
  }
  const rate = (seconds: number) => (tokens * REPEATS) / seconds;
  row('trainer fwd+bwd tokens/s, 1 thread (baseline)', fmt(rate(fb[0]!)));
  row(
    'trainer fwd+bwd tokens/s, 2 threads',
    `${fmt(rate(fb[1]!))}  (${(fb[0]! / fb[1]!).toFixed(2)}×)`,
  );
  row('trainer forward tokens/s, 1 thread', fmt(rate(fwd[0]!)));
  row(
    'trainer forward tokens/s, 2 threads',
    `${fmt(rate(fwd[1]!))}  (${(fwd[0]! / fwd[1]!).toFixed(2)}×)`,
  );

  const weights = await models[0]!.saveWeightsForSampler('bench');
  const engines = [1, 2].map((threads) => new EmbeddedInferenceEngine({ threads }));
  try {
    for (const e of engines) await e.loadWeights(weights);
    const prompts = Array.from({ length: PROMPTS }, () => text(48));
    const request = {
      maxTokens: MAX_TOKENS,
      temperature: 1,
      topP: 1,
      stopTokenIds: [] as number[],
    };
    const batched = (e: EmbeddedInferenceEngine) => async () => {
      let generated = 0;
      const seconds = await timed(async () => {
        const out = await Promise.all(
          prompts.map((prompt, i) => e.sample({ ...request, prompt, n: SAMPLES, seed: i })),
        );
        generated = out.flat().reduce((s, q) => s + q.tokens.length, 0);
      });
      return generated / seconds;
    };
    const unbatched = (e: EmbeddedInferenceEngine) => async () => {
      let generated = 0;
      const seconds = await timed(async () => {
        for (const prompt of prompts.slice(0, 2)) {
          for (let k = 0; k < SAMPLES; k++) {
            const [seq] = await e.sample({ ...request, prompt, n: 1, seed: k });
            generated += seq!.tokens.length;
          }
        }
      });
      return generated / seconds;
    };
    await batched(engines[1]!)(); // warm-up
    const base = await median(unbatched(engines[0]!));
    const one = await median(batched(engines[0]!));
    const two = await median(batched(engines[1]!));
    row('sampler tokens/s, n=1 requests, 1 worker (baseline)', fmt(base));
    row(
      `sampler tokens/s, n=${SAMPLES} batches, 1 worker`,
      `${fmt(one)}  (${(one / base).toFixed(2)}×)`,
    );
    row(
      `sampler tokens/s, n=${SAMPLES} batches, 2 workers`,
      `${fmt(two)}  (${(two / base).toFixed(2)}×)`,
    );

    // mismatch between the two numeric paths on sampled tokens (T = 1, top-p = 1)
    const samples = await engines[1]!.sample({
      ...request,
      prompt: prompts[0]!,
      n: SAMPLES,
      seed: 99,
    });
    const data: Datum[] = samples.map((s) => {
      const all = [...prompts[0]!, ...s.tokens];
      return {
        modelInput: all.slice(0, -1),
        lossFnInputs: {
          target_tokens: Int32Array.from(all.slice(1)),
          weights: new Float32Array(all.length - 1),
        },
      };
    });
    const train = await models[0]!.forward(data, 'cross_entropy');
    let k1 = 0;
    let k3 = 0;
    let maxAbs = 0;
    let count = 0;
    samples.forEach((s, i) => {
      s.logprobs.forEach((infer, t) => {
        const d = infer - train.logprobs[i]![prompts[0]!.length - 1 + t]!; // logp_infer − logp_train
        k1 += d;
        k3 += Math.exp(-d) - 1 + d;
        maxAbs = Math.max(maxAbs, Math.abs(d));
        count++;
      });
    });
    row(`train–inference k3 KL (${count} sampled tokens)`, (k3 / count).toExponential(2));
    row('train–inference k1', (k1 / count).toExponential(2));
    row('max |logp_infer − logp_train|', maxAbs.toExponential(2));
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
} finally {
  await Promise.all(trainers.map((t) => t.close()));
  await rm(dir, { recursive: true, force: true });
}
