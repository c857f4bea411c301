// Sequences -> trainer Datums in the Tinker convention (docs/engines.md): model_input is the
// sequence without its last token and every loss input is aligned with it, position t
// describing the target token t+1. Executors keep per-token arrays aligned with the whole
// sequence (index = token position) and shift once, here.
import type { Datum, TokenIds } from '@anneal/engines';

/** A next-token-prediction datum; `perToken[name][t]` belongs to `tokens[t]` (t >= 1 used).
 * Int32Array ids and Float32Array values are taken as views, not copied (a step's datums are
 * ~5 arrays of every token: copies were most of building them, and their bytes the collector's
 * work), so neither may be written while the datum is in use: a rollout's ids and logprobs are
 * never written once sampled, and the executors build the other arrays for the datum alone. */
export function shiftedDatum(
  tokens: TokenIds,
  perToken: Readonly<Record<string, ArrayLike<number>>>,
): Datum {
  if (tokens.length < 2) {
    throw new RangeError(`a training sequence needs at least 2 tokens, got ${tokens.length}`);
  }
  const ids = tokens instanceof Int32Array ? tokens : Int32Array.from(tokens);
  const lossFnInputs: Datum['lossFnInputs'] = { target_tokens: ids.subarray(1) };
  for (const [name, values] of Object.entries(perToken)) {
    if (values.length !== tokens.length) {
      throw new RangeError(`${name}: ${values.length} values for ${tokens.length} tokens`);
    }
    if (values instanceof Float32Array) {
      lossFnInputs[name] = values.subarray(1);
      continue;
    }
    const shifted = new Float32Array(tokens.length - 1);
    if (values instanceof Float64Array) {
      shifted.set(values.subarray(1)); // converted natively, as the loop below rounds each value
    } else {
      for (let t = 1; t < tokens.length; t++) shifted[t - 1] = values[t]!;
    }
    lossFnInputs[name] = shifted;
  }
  return { modelInput: ids.subarray(0, -1), lossFnInputs };
}

/** A value-head datum scoring the whole sequence (Bradley–Terry, docs/recipe.md §5); `label` r is
 * aligned with model_input like every loss input (each value r). */
export function scoreDatum(tokens: readonly number[], label?: number): Datum {
  if (tokens.length === 0) throw new RangeError('a scored sequence needs at least 1 token');
  const lossFnInputs: Datum['lossFnInputs'] = {};
  if (label !== undefined) lossFnInputs['label'] = new Float32Array(tokens.length).fill(label);
  return { modelInput: [...tokens], lossFnInputs };
}
