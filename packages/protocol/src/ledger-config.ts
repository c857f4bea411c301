// Operator caps of the rollout ledger (operator config `ledger`, docs/operations.md "Rollout
// ledger"): what a GRPO worker keeps of every step's rollouts on the artifact volume.
import { Type, type Static } from '@sinclair/typebox';

export const LedgerConfig = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description: 'Record every GRPO step’s rollouts in the run’s artifact directory.',
    }),
    keepAllSteps: Type.Integer({
      minimum: 0,
      maximum: 100_000,
      default: 20,
      description: 'The last N committed steps keep every rollout; older steps keep a sample.',
    }),
    sampleGroups: Type.Integer({
      minimum: 0,
      maximum: 65_536,
      default: 4,
      description:
        'Groups (prompts) kept of every older step, chosen by the run seed and the step (stable across attempts).',
    }),
    compression: Type.Union([Type.Literal('brotli'), Type.Literal('gzip')], {
      default: 'brotli',
      description:
        'Codec of the data files: brotli (quality 1: half the CPU of gzip level 1, 4 % fewer bytes) or gzip (level 1: files zcat, pandas and Python read as they are). Steps in either are read.',
    }),
    resultChars: Type.Integer({
      minimum: 0,
      maximum: 65_536,
      default: 240,
      description: 'Characters kept of each tool result (the rest is counted, not stored).',
    }),
  },
  { additionalProperties: false, default: {}, description: 'Rollout ledger retention caps.' },
);
export type LedgerConfig = Static<typeof LedgerConfig>;
export type LedgerCompression = LedgerConfig['compression'];
