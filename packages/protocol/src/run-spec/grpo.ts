// On-policy GRPO with tools, composite gated reward and IS correction (docs/recipe.md §2–§4, §6).
import { Type, type Static } from '@sinclair/typebox';
import { ToolLimits, commonFields, dataSection, trainingFields } from './common.ts';

/** Most steps a rollout's sampling policy may trail the trained one (docs/recipe.md "Pipelined GRPO"). */
export const MAX_POLICY_LAG = 4;

/** Default `rollout.probeFraction`: the mismatch probe samples 1/8 of a batch's tokens
 * (docs/recipe.md §2.6 "The mismatch at every step" gives its variance and cost). */
export const MISMATCH_PROBE_FRACTION = 0.125;

/** Fewest mismatch-probe rollouts (all of a smaller batch): below ~30 rollouts the probe's
 * standard error, and the estimate of it, come apart on heavy-tailed lengths. */
export const MIN_PROBE_ROLLOUTS = 32;

export const RolloutSection = Type.Object(
  {
    groupSize: Type.Integer({
      minimum: 2,
      maximum: 1024,
      default: 8,
      description: 'G: rollouts per prompt (one GRPO group, docs/recipe.md §2).',
    }),
    promptsPerStep: Type.Integer({
      minimum: 1,
      maximum: 65_536,
      default: 16,
      description: 'Prompts (groups) per optimizer step.',
    }),
    temperature: Type.Number({
      minimum: 0,
      maximum: 10,
      default: 1,
      description:
        'Sampling temperature; ≠ 1 needs a trainer scoring at T (docs/engines.md "Logprobs and temperature").',
    }),
    topP: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1,
      default: 1,
      description: 'Nucleus sampling top-p; < 1 is refused unless allowTopPBias is true.',
    }),
    allowTopPBias: Type.Boolean({
      default: false,
      description:
        'Accept topP < 1; IS ratios then carry the truncation bias (docs/engines.md "Logprobs and temperature").',
    }),
    maxTokens: Type.Integer({
      minimum: 1,
      maximum: 1_048_576,
      default: 2048,
      description: 'Maximum generated tokens per rollout (all turns together).',
    }),
    maxPolicyLag: Type.Integer({
      minimum: 0,
      maximum: MAX_POLICY_LAG,
      default: 0,
      description:
        'k: rollouts of the next k steps are sampled while a step trains, by a policy up to k versions old; 0 = on-policy (docs/recipe.md "Pipelined GRPO").',
    }),
    probeFraction: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1,
      default: MISMATCH_PROBE_FRACTION,
      description:
        "Mismatch probe of a lagged step: whole multi-turn rollouts of the trained version, as many as this share of the batch's generated tokens takes (docs/recipe.md §2.6).",
    }),
    probeEvery: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 1,
      description:
        'With maxPolicyLag ≥ 1: the mismatch probe runs at steps divisible by this (1: every lagged step); other lagged steps record mismatch_kl null and cost nothing (docs/recipe.md §2.6).',
    }),
  },
  { additionalProperties: false, default: {} },
);

/** R = r_base·s − (λ_tool·pen_tool + λ_len·pen_len) (docs/recipe.md §4). */
export const RewardSection = Type.Object(
  {
    gate: Type.Boolean({
      default: true,
      description:
        'true: R = r_base·s − pen (correctness gates preference); false: linear R = r_base + s − pen (ablation).',
    }),
    alphaWin: Type.Number({
      minimum: 0,
      default: 1,
      description: 'α_win: tool-penalty weight for winners (r_base = 1).',
    }),
    alphaLose: Type.Number({
      minimum: 0,
      default: 1,
      description: 'α_lose: tool-penalty weight for losers.',
    }),
    betaLose: Type.Number({
      minimum: 0,
      default: 0.1,
      description: 'β_lose: constant tool penalty added for losers.',
    }),
    lambdaTool: Type.Number({
      minimum: 0,
      default: 0.1,
      description: 'λ_tool: weight of the anchored tool-call penalty.',
    }),
    lambdaLen: Type.Number({
      minimum: 0,
      default: 0.1,
      description: 'λ_len: weight of the anchored length penalty.',
    }),
  },
  { additionalProperties: false, default: {} },
);

/** Importance-sampling correction of the train–inference mismatch (docs/recipe.md §2). */
export const ImportanceSamplingSection = Type.Object(
  {
    level: Type.Union([Type.Literal('token'), Type.Literal('sequence')], {
      default: 'token',
      description:
        'token: per-token ratio; sequence: geometric mean over the sequence (GSPO-style).',
    }),
    truncate: Type.Boolean({
      default: false,
      description: 'Truncated IS (TIS): clip ratios at clipMax.',
    }),
    clipMax: Type.Number({
      exclusiveMinimum: 1,
      default: 2,
      description: 'TIS clip maximum (used when truncate is true).',
    }),
    mask: Type.Boolean({
      default: false,
      description: 'Masked IS: drop tokens/sequences whose ratio leaves [maskLow, maskHigh].',
    }),
    maskLow: Type.Number({
      minimum: 0,
      exclusiveMaximum: 1,
      default: 0.5,
      description: 'Lower ratio bound for masked IS.',
    }),
    maskHigh: Type.Number({
      exclusiveMinimum: 1,
      default: 2,
      description: 'Upper ratio bound for masked IS.',
    }),
  },
  { additionalProperties: false, default: {} },
);

export const AdvantageSection = Type.Object(
  {
    normalizeStd: Type.Boolean({
      default: false,
      description: 'Divide group-relative advantages by std_j R_j + 1e-6 (docs/recipe.md §2).',
    }),
  },
  { additionalProperties: false, default: {} },
);

export const ReferenceSection = Type.Object(
  {
    cacheGenerations: Type.Boolean({
      default: true,
      description:
        "Cache the frozen reference model's generations per prompt across steps (docs/recipe.md §4).",
    }),
    cacheMaxGroups: Type.Integer({
      minimum: 1,
      default: 1024,
      description:
        'The most prompts whose reference generations the cache holds; the least recently used leave first and are generated again when drawn again (about 0.5 MiB a prompt of 16 × 4,096 tokens).',
    }),
  },
  { additionalProperties: false, default: {} },
);

/** What the rollout ledger records of each step (docs/architecture.md "The rollout ledger"). */
export const LedgerSection = Type.Object(
  {
    tokens: Type.Boolean({
      default: false,
      description:
        'Also record token ids and the sampler’s and trainer’s per-token logprobs (float32 each) in the rollout ledger.',
    }),
  },
  { additionalProperties: false, default: {} },
);

export const GrpoSpec = Type.Object(
  {
    kind: Type.Literal('grpo'),
    ...commonFields,
    ...trainingFields(100, 1e-5),
    data: dataSection(
      [
        { source: 'search-qa', weight: 0.9 },
        { source: 'rubric-chat', weight: 0.1 },
      ],
      'Prompt mix: 90% verifiable search QA, 10% rubric chat by default (docs/recipe.md §3).',
    ),
    rollout: RolloutSection,
    tools: ToolLimits,
    reward: RewardSection,
    importanceSampling: ImportanceSamplingSection,
    advantage: AdvantageSection,
    reference: ReferenceSection,
    ledger: LedgerSection,
  },
  { additionalProperties: false },
);
export type GrpoSpec = Static<typeof GrpoSpec>;
