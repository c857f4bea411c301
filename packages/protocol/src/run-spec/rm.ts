// Reward-model training, Bradley–Terry with symmetric pairs (docs/recipe.md §5). There is no
// switch for the symmetric loss: the reward model scores one response at a time, so
// Δ(x, y_b, y_a) = −Δ(x, y_a, y_b) and L_sym equals ℓ_BT; a `symmetric: false` could not
// train anything different (docs/recipe.md §5, last paragraph).
import { Type, type Static } from '@sinclair/typebox';
import { commonFields, dataSection, trainingFields } from './common.ts';

export const RmSpec = Type.Object(
  {
    kind: Type.Literal('rm'),
    ...commonFields,
    ...trainingFields(200, 1e-4),
    data: dataSection(
      [{ source: 'preference-pairs', weight: 1 }],
      'Preference-pair datasets (pairs with consistent cross-model agreement).',
    ),
    batchSize: Type.Integer({
      minimum: 1,
      maximum: 4096,
      default: 16,
      description: 'Preference pairs per optimizer step.',
    }),
    maxSeqLen: Type.Integer({
      minimum: 16,
      maximum: 1_048_576,
      default: 2048,
      description: 'Prompt + response longer than this is truncated.',
    }),
  },
  { additionalProperties: false },
);
export type RmSpec = Static<typeof RmSpec>;
