// Response shapes of the usage routes (docs/usage.md "Reading usage", docs/api.md): GET /v1/runs/{id}/usage,
// GET /v1/usage (operator, per tenant and period) and POST /v1/runs/estimate.
import { Type, type Static } from '@sinclair/typebox';
import { RunKindSchema } from './run-spec/kind.ts';
import { RunStateSchema } from './run-state.ts';
import { BUDGET_PERIODS, UsagePrices } from './usage.ts';

const count = (description: string) => Type.Number({ minimum: 0, description });

export const UsageQuantities = Type.Object(
  {
    promptTokens: count('Prompt tokens sent to the sampler (every request re-sends its context).'),
    completionTokens: count('Tokens the sampler generated.'),
    trainedTokens: count('Tokens the trainer trained on.'),
    toolCalls: count('Tool calls that reached the search backend.'),
    judgeCalls: count('Requests to the LLM judge.'),
    scoredTokens: count(
      'Tokens sent to the reward model (prompt and response of each scored rollout).',
    ),
    slotSeconds: count('Seconds a worker slot was held.'),
  },
  { additionalProperties: false },
);

export const UsageCostSchema = Type.Object(
  {
    promptTokens: Type.Number(),
    completionTokens: Type.Number(),
    trainedTokens: Type.Number(),
    toolCalls: Type.Number(),
    judgeCalls: Type.Number(),
    scoredTokens: Type.Number(),
    slotSeconds: Type.Number(),
    total: Type.Number(),
  },
  { additionalProperties: false, description: 'USD by item and in total.' },
);

const BudgetPeriodSchema = Type.Union(BUDGET_PERIODS.map((p) => Type.Literal(p)));

export const BudgetStatus = Type.Object(
  {
    maxUsd: Type.Number(),
    remainingUsd: Type.Number({ minimum: 0 }),
    reached: Type.Boolean({ description: 'Spent ≥ maxUsd: the run (or the tenant) is paused.' }),
  },
  { additionalProperties: false },
);

export const RunUsage = Type.Object(
  {
    runId: Type.String(),
    tenant: Type.String(),
    kind: RunKindSchema,
    state: RunStateSchema,
    usage: UsageQuantities,
    costUsd: UsageCostSchema,
    budget: Type.Union([BudgetStatus, Type.Null()], { description: 'The spec’s `budget`.' }),
  },
  {
    additionalProperties: false,
    description: 'Metered once per committed step and per attempt; priced as metered.',
  },
);
export type RunUsage = Static<typeof RunUsage>;

export const TenantUsage = Type.Object(
  {
    tenant: Type.String(),
    usage: UsageQuantities,
    costUsd: UsageCostSchema,
    budget: Type.Union(
      [Type.Composite([BudgetStatus, Type.Object({ period: BudgetPeriodSchema })]), Type.Null()],
      {
        description: 'The tenant’s cap (operator config), counted over its own period.',
      },
    ),
  },
  { additionalProperties: false },
);

export const TenantUsageList = Type.Object(
  {
    period: BudgetPeriodSchema,
    at: Type.String({ description: 'The UTC period: `YYYY-MM-DD` or `YYYY-MM`.' }),
    tenants: Type.Array(TenantUsage),
    prices: UsagePrices,
  },
  { additionalProperties: false },
);
export type TenantUsageList = Static<typeof TenantUsageList>;

const StepEstimateSchema = Type.Object(
  { step: Type.Integer({ minimum: 1 }), usage: UsageQuantities, costUsd: UsageCostSchema },
  { additionalProperties: false },
);

export const RunEstimateSchema = Type.Object(
  {
    kind: RunKindSchema,
    steps: Type.Integer({ minimum: 0 }),
    perStep: Type.Array(StepEstimateSchema, {
      description: 'The distinct steps: one for training kinds, one per tool-call budget for eval.',
    }),
    total: Type.Object(
      { usage: UsageQuantities, costUsd: UsageCostSchema },
      { additionalProperties: false },
    ),
    notEstimated: Type.Array(Type.String()),
    budget: Type.Union([
      Type.Object({ maxUsd: Type.Number(), fits: Type.Boolean() }, { additionalProperties: false }),
      Type.Null(),
    ]),
    prices: UsagePrices,
  },
  {
    additionalProperties: false,
    description: 'A ceiling from the bounds the spec sets, at the operator’s prices.',
  },
);
