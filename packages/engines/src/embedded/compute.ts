// One forward (and optionally backward) pass over a batch of checked datums: the unit of work a
// trainer thread runs. Sequences are processed one at a time; gradients accumulate (sum).
import type { LossFn, LossFnConfig } from '../types.ts';
import type { Floats } from './kernels.ts';
import type { CheckedDatum } from './losses.ts';
import { symmetricBradleyTerry, tokenLoss } from './losses.ts';
import type { Transformer } from './model.ts';

export interface DatumOutput {
  /** LM: π_train logprob of each target token (T). Value head: [score]. */
  logprobs: Float32Array;
  /** Per-position loss (LM) or [half the pair loss] (Bradley–Terry). */
  elementwise: Float32Array;
}

export interface BatchOutput {
  outputs: DatumOutput[];
  lossSum: number;
  /** Bradley–Terry only: pairs seen and pairs ranked as labelled. */
  pairs: number;
  pairsCorrect: number;
}

export function runBatch(
  model: Transformer,
  data: readonly CheckedDatum[],
  lossFn: LossFn,
  config: LossFnConfig,
  grads: Floats | null,
): BatchOutput {
  if (lossFn === 'bradley_terry') return runPairs(model, data, grads);
  if (model.config.head !== 'lm') {
    throw new RangeError(`loss_fn ${lossFn} needs an LM head; this model has a value head`);
  }
  const outputs: DatumOutput[] = [];
  let lossSum = 0;
  for (const datum of data) {
    const acts = model.forward(datum.tokens, config.temperature ?? 1); // π_train at the sampler's T
    const logp = model.tokenLogprobs(acts, datum.targets!);
    const loss = tokenLoss(lossFn, datum, logp, config);
    if (grads) model.backwardLm(acts, datum.targets!, loss.dLogp, grads);
    outputs.push({
      logprobs: Float32Array.from(logp),
      elementwise: Float32Array.from(loss.elementwise),
    });
    lossSum += loss.lossSum;
  }
  return { outputs, lossSum, pairs: 0, pairsCorrect: 0 };
}

/** Consecutive datums (2i, 2i+1) are the pair (x, y_a), (x, y_b); datum 2i carries label r. */
export function pairLabel(data: readonly CheckedDatum[], i: number): number {
  const first = data[2 * i]!;
  const second = data[2 * i + 1]!;
  if (first.label === null) {
    throw new RangeError(
      `data[${2 * i}].loss_fn_inputs.label: required on the first datum of each pair`,
    );
  }
  if (second.label !== null && Math.abs(second.label - (1 - first.label)) > 1e-6) {
    throw new RangeError(
      `data[${2 * i + 1}].loss_fn_inputs.label: must equal 1 − data[${2 * i}].label`,
    );
  }
  return first.label;
}

function runPairs(
  model: Transformer,
  data: readonly CheckedDatum[],
  grads: Floats | null,
): BatchOutput {
  if (model.config.head !== 'value') {
    throw new RangeError(
      'loss_fn bradley_terry needs a value-head model (create it with head: value)',
    );
  }
  if (data.length % 2 !== 0) {
    throw new RangeError(
      `bradley_terry takes pairs: got ${data.length} datums, expected an even number`,
    );
  }
  const outputs: DatumOutput[] = [];
  let lossSum = 0;
  let pairsCorrect = 0;
  for (let i = 0; i < data.length / 2; i++) {
    const r = pairLabel(data, i);
    const actsA = model.forward(data[2 * i]!.tokens);
    const actsB = model.forward(data[2 * i + 1]!.tokens);
    const pair = symmetricBradleyTerry(actsA.score, actsB.score, r);
    if (grads) {
      model.backwardValue(actsA, pair.dScoreA, grads);
      model.backwardValue(actsB, pair.dScoreB, grads);
    }
    const half = Float32Array.of(pair.loss / 2);
    outputs.push({ logprobs: Float32Array.of(actsA.score), elementwise: half });
    outputs.push({ logprobs: Float32Array.of(actsB.score), elementwise: half.slice() });
    lossSum += pair.loss;
    pairsCorrect += pair.correct;
  }
  return { outputs, lossSum, pairs: data.length / 2, pairsCorrect };
}
