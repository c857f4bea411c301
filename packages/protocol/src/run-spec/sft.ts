// SFT warm-up (docs/recipe.md §1.1): token cross-entropy on completion tokens only.
import { Type, type Static } from '@sinclair/typebox';
import { commonFields, dataSection, trainingFields } from './common.ts';

export const SftSpec = Type.Object(
  {
    kind: Type.Literal('sft'),
    ...commonFields,
    ...trainingFields(200, 1e-4),
    data: dataSection(
      [
        { source: 'style-preferences', weight: 0.5 },
        { source: 'tool-trajectories', weight: 0.5 },
      ],
      'SFT datasets: style/preference examples and production-format tool-use trajectories (docs/recipe.md §1).',
    ),
    batchSize: Type.Integer({
      minimum: 1,
      maximum: 4096,
      default: 16,
      description: 'Examples per optimizer step.',
    }),
    maxSeqLen: Type.Integer({
      minimum: 16,
      maximum: 1_048_576,
      default: 2048,
      description: 'Longer examples are truncated to this many tokens.',
    }),
  },
  { additionalProperties: false },
);
export type SftSpec = Static<typeof SftSpec>;
