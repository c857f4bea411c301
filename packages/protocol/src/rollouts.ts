// The rollout ledger's record (docs/architecture.md "The rollout ledger"): one policy or reference
// rollout of one GRPO step as the worker saw it — prompt, turns, tool calls, finish, reward parts,
// advantage, its IS ratios against the trainer — and the per-step index the readers sort and page
// by without decompressing a step. The worker writes them (apps/worker executors/grpo/ledger*.ts),
// @anneal/store's rollout-ledger module stores and reads them, the control plane serves them.
import { Type, type Static } from '@sinclair/typebox';

export const ROLLOUT_ROLES = ['policy', 'reference'] as const;
export type RolloutRole = (typeof ROLLOUT_ROLES)[number];

/** `<step>-<group>-<index>` for a policy rollout, `<step>-<group>-r<index>` for a reference. */
export const ROLLOUT_ID_PATTERN = '^[0-9]+-[0-9]+-r?[0-9]+$';

export function rolloutId(role: RolloutRole, step: number, group: number, index: number): string {
  return `${step}-${group}-${role === 'reference' ? 'r' : ''}${index}`;
}

/** The parts of a rollout id; null when `id` is not one. */
export function parseRolloutId(
  id: string,
): { role: RolloutRole; step: number; group: number; index: number } | null {
  const match = /^([0-9]+)-([0-9]+)-(r?)([0-9]+)$/.exec(id);
  if (!match) return null;
  return {
    role: match[3] === 'r' ? 'reference' : 'policy',
    step: Number(match[1]),
    group: Number(match[2]),
    index: Number(match[4]),
  };
}

const Count = (description: string) => Type.Integer({ minimum: 0, description });
/** A field under its old name (docs/recipe.md "Renamed fields"): never stored, added to REST
 * responses until DEPRECATED_NAMES_UNTIL (renamed-fields.ts). */
const Deprecated = (renamedTo: string) =>
  Type.Optional(
    Type.Number({ deprecated: true, description: `Deprecated: the same as ${renamedTo}.` }),
  );
const Nullable = <T extends ReturnType<typeof Type.Number>>(value: T) =>
  Type.Union([value, Type.Null()], { description: value.description });

export const RolloutToolCall = Type.Object(
  {
    name: Type.String({ description: 'Tool name (search_web).' }),
    arguments: Type.Object(
      { query: Type.String() },
      { additionalProperties: false, description: 'The arguments as parsed from the call.' },
    ),
    status: Type.String({
      description: 'ok, empty, invalid, malformed, refused or error (envs ToolCallStatus).',
    }),
    failed: Type.Boolean({ description: 'Counted in e_i, the tool errors of the penalty.' }),
    resultCount: Count('Search results returned.'),
    result: Type.String({ description: 'The start of the text returned to the model.' }),
    resultChars: Count('Length of the whole result text in characters.'),
    error: Type.Optional(Type.String({ description: 'Why the call failed.' })),
  },
  { additionalProperties: false },
);
export type RolloutToolCall = Static<typeof RolloutToolCall>;

export const RolloutTurn = Type.Object(
  {
    assistant: Type.String({ description: 'What the model generated in this turn (decoded).' }),
    calls: Type.Array(RolloutToolCall, { description: 'Tool calls of the turn, in order.' }),
  },
  { additionalProperties: false },
);
export type RolloutTurn = Static<typeof RolloutTurn>;

/** docs/recipe.md §4: R = r_base·s − pen_eff, pen_eff = λ_tool·pen_tool + λ_len·pen_len (names:
 * docs/recipe.md "Glossary"). */
export const RolloutRewards = Type.Object(
  {
    baseReward: Type.Number({
      description: 'r_base ∈ {0, 1}: right answer / every rubric passes.',
    }),
    preferenceScore: Type.Number({
      description: 's: preference score against the paired reference.',
    }),
    base: Deprecated('baseReward'),
    preference: Deprecated('preferenceScore'),
    toolPenalty: Type.Number({ description: 'pen_tool (anchored on the group baseline b_g).' }),
    lengthPenalty: Type.Number({ description: 'pen_len (anchored on the reference length).' }),
    efficiencyPenalty: Type.Number({ description: 'pen_eff = λ_tool·pen_tool + λ_len·pen_len.' }),
    reward: Type.Number({ description: 'R, the composite reward the advantage is computed from.' }),
  },
  { additionalProperties: false },
);
export type RolloutRewards = Static<typeof RolloutRewards>;

/** Per-rollout IS ratio r_t = exp(logp_train − logp_infer) over its generated tokens. */
export const RolloutRatio = Type.Object(
  {
    mean: Type.Number(),
    min: Type.Number(),
    max: Type.Number(),
    k3: Type.Number({ description: 'mean(exp(−d) − 1 + d), d = logp_infer − logp_train.' }),
    generated: Count('|o_i|: generated tokens the ratios are over.'),
    tokens: Deprecated('generated'),
  },
  { additionalProperties: false },
);
export type RolloutRatio = Static<typeof RolloutRatio>;

export const RubricCheckResult = Type.Object(
  {
    text: Type.String({ description: 'The rubric as written.' }),
    by: Type.Union([Type.Literal('program'), Type.Literal('judge')]),
    passed: Type.Union([Type.Boolean(), Type.Null()], {
      description:
        "The program's or the judge's verdict; null: a judged rubric the judge was not asked about (no answer, or a programmatic rubric failed first).",
    }),
  },
  { additionalProperties: false },
);
export type RubricCheckResult = Static<typeof RubricCheckResult>;

/** Written only with the GRPO spec's `ledger.tokens: true`. Logprobs are little-endian float32
 * arrays in base64 (exact, 4 bytes a token): `decodeLogprobs`. */
export const RolloutTokens = Type.Object(
  {
    ids: Type.Array(Type.Integer({ minimum: 0 }), {
      description: 'Token ids after the prompt (generated and tool output).',
    }),
    generated: Type.Array(Type.Integer({ minimum: 0 }), {
      description: 'Indices into `ids` of the model-generated tokens (the rest is tool output).',
    }),
    samplerLogprobs: Type.Optional(
      Type.String({
        description:
          'The sampler’s logprob of each generated token (float32 LE, base64); policy rollouts ' +
          'only (reference rollouts are sampled without them).',
      }),
    ),
    trainerLogprobs: Type.Optional(
      Type.String({
        description: 'The trainer’s logprob of each generated token (policy rollouts only).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type RolloutTokens = Static<typeof RolloutTokens>;

export const RolloutRecord = Type.Object(
  {
    id: Type.String({ pattern: ROLLOUT_ID_PATTERN }),
    role: Type.Union([Type.Literal('policy'), Type.Literal('reference')]),
    step: Type.Integer({ minimum: 1 }),
    group: Count('Group (prompt) index within the step.'),
    index: Count('Rollout index within the group; policy i is scored against reference i.'),
    pairedWith: Type.String({ description: 'Id of the rollout on the other side of the pair.' }),
    policyVersion: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'Policy version that sampled it (null: the frozen reference model).',
    }),
    promptId: Type.String({
      description: 'Stable id of the dataset example: the same across steps and runs.',
    }),
    source: Type.String({ description: 'Mix source (dataset name) of the prompt.' }),
    exampleId: Type.String({ description: 'The example’s id in its dataset.' }),
    component: Type.Union([Type.Literal('qa'), Type.Literal('rubric')]),
    prompt: Type.Object(
      { text: Type.String(), tokens: Deprecated('lengths.prompt') },
      { additionalProperties: false },
    ),
    turns: Type.Array(RolloutTurn),
    answer: Type.Union([Type.String(), Type.Null()], {
      description: 'Final answer; null when none was given.',
    }),
    finish: Type.Union([
      Type.Literal('answer'),
      Type.Literal('no_answer'),
      Type.Literal('length'),
      Type.Literal('context_overflow'),
    ]),
    truncated: Type.Boolean({ description: 'Stopped by a token budget, not by the model.' }),
    lengths: Type.Object(
      {
        prompt: Count('Prompt tokens as the chat format encodes it.'),
        generated: Count('|o_i|: model-generated tokens.'),
        response: Count('All tokens after the prompt (generated and tool output).'),
        total: Count('Prompt + response.'),
      },
      { additionalProperties: false },
    ),
    toolCalls: Count('c_i: tool calls emitted (failed and refused included).'),
    toolErrors: Count('e_i: failed tool calls.'),
    rewards: Type.Union([RolloutRewards, Type.Null()], {
      description: 'Policy rollouts only; null for references.',
    }),
    advantage: Nullable(Type.Number({ description: 'Â_i (policy rollouts only).' })),
    ratio: Type.Union([RolloutRatio, Type.Null()], {
      description: 'Policy rollouts with generated tokens only.',
    }),
    checks: Type.Union([Type.Array(RubricCheckResult), Type.Null()], {
      description: 'Rubric prompts: each rubric; null for QA and references.',
    }),
    tokens: Type.Optional(RolloutTokens),
  },
  { additionalProperties: false },
);
export type RolloutRecord = Static<typeof RolloutRecord>;

/** One rollout in a step's index: what the readers sort, filter and page by, and where its
 * record lies (the group's compressed bytes in the step's data file). */
export const RolloutIndexEntry = Type.Object(
  {
    id: Type.String({ pattern: ROLLOUT_ID_PATTERN }),
    role: Type.Union([Type.Literal('policy'), Type.Literal('reference')]),
    group: Count('Group within the step.'),
    index: Count('Rollout within the group.'),
    promptId: Type.String(),
    reward: Type.Union([Type.Number(), Type.Null()]),
    advantage: Type.Union([Type.Number(), Type.Null()]),
    ratio: Type.Union([Type.Number(), Type.Null()], { description: 'Mean IS ratio.' }),
    length: Count('Generated tokens.'),
    toolCalls: Count('Tool calls.'),
    finish: Type.String(),
  },
  { additionalProperties: false },
);
export type RolloutIndexEntry = Static<typeof RolloutIndexEntry>;

/** Where one group's records lie in a step's data file: bytes [offset, offset + length) are one
 * Brotli stream (a `.br` file) or gzip member (a `.gz` file, steps written before 2026-12-07)
 * holding its JSON lines (policy rollouts, then references). */
export const LedgerGroupExtent = Type.Object(
  {
    group: Count('Group within the step.'),
    file: Type.String({
      description: 'Data file in the step directory; its extension names the codec (.br, .gz).',
    }),
    offset: Count("Byte offset of the group's compressed bytes."),
    length: Count("Bytes of the group's compressed bytes."),
  },
  { additionalProperties: false },
);
export type LedgerGroupExtent = Static<typeof LedgerGroupExtent>;

/** 2: `hasTokens` and `rollbacks` (1: `tokens`, `generation`; renamed-fields.ts reads both). */
export const LEDGER_INDEX_VERSION = 2;

/** `index.json` of a step directory. */
export const LedgerStepIndex = Type.Object(
  {
    version: Type.Literal(LEDGER_INDEX_VERSION),
    step: Type.Integer({ minimum: 1 }),
    attempt: Type.Integer({ minimum: 1, description: 'The attempt whose rollouts these are.' }),
    rollbacks: Type.Integer({
      minimum: 0,
      description: 'Rollbacks the run had taken when the step ran (StepRecord.rollbacks).',
    }),
    policyVersion: Type.Integer({ minimum: 0 }),
    groups: Count('Groups the step had (kept or not).'),
    groupSize: Count('Rollouts per group.'),
    hasTokens: Type.Boolean({ description: 'Records carry `tokens` (token ids and logprobs).' }),
    pruned: Type.Boolean({ description: 'Past the keep-all window: only `kept` groups remain.' }),
    kept: Type.Array(Type.Integer({ minimum: 0 }), { description: 'Groups whose records remain.' }),
    extents: Type.Array(LedgerGroupExtent),
    rollouts: Type.Array(RolloutIndexEntry),
  },
  { additionalProperties: false },
);
export type LedgerStepIndex = Static<typeof LedgerStepIndex>;
