// Reward-model training, Bradley–Terry with symmetric pairs (docs/recipe.md §5).
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
    symmetric: Type.Boolean({
      default: true,
      description: 'Train on both orders, L_sym = ½ℓ(a,b,r) + ½ℓ(b,a,1−r) (docs/recipe.md §5).',
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
