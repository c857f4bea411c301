// Every label an `anneal_*` metric may carry, with its closed value set where one exists.
// Closed sets keep cardinality bounded and give the events their TypeScript types. Run kinds
// and states, and the values step-record keys vary over, are the protocol's own
// (@anneal/protocol), not copies.
import {
  GUARDRAIL_ACTIONS,
  KL_ESTIMATORS,
  LAG_CLASSES,
  RATIO_STATS,
  REWARD_COMPONENTS,
  RUN_KINDS,
  STEP_PHASES,
} from '@anneal/protocol';

/** Where a worker-side failure happened. */
export const SUBSYSTEMS = [
  'rollout',
  'inference',
  'trainer',
  'reward',
  'tool',
  'checkpoint',
] as const;
export type Subsystem = (typeof SUBSYSTEMS)[number];

/** Remote or embedded engines a worker sends requests to. */
export const ENGINES = ['inference', 'trainer', 'reward_model', 'judge', 'search'] as const;
export type EngineName = (typeof ENGINES)[number];

export const OUTCOMES = ['ok', 'error'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** BullMQ job states that count as queue depth (completed/failed are history, not depth). */
export const QUEUE_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'paused'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** online = registered with a live heartbeat; busy and draining are subsets of online. */
export const WORKER_STATES = ['online', 'busy', 'draining'] as const;
export type WorkerState = (typeof WORKER_STATES)[number];

/** Sampled and trained tokens a tenant is billed for (docs/usage.md). */
export const TOKEN_TYPES = ['prompt', 'completion', 'trained', 'scored'] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];

/** What a tenant's dollars were spent on: the price table's items (docs/usage.md). */
export const USAGE_ITEMS = [
  'prompt_tokens',
  'completion_tokens',
  'trained_tokens',
  'tool_calls',
  'judge_calls',
  'scored_tokens',
  'slot_seconds',
] as const;
export type UsageItem = (typeof USAGE_ITEMS)[number];

export const APPS = ['control-plane', 'worker'] as const;
export type AppName = (typeof APPS)[number];

export interface LabelDefinition {
  description: string;
  /** Closed value set; absent = open but bounded by configuration (pools, workers, routes). */
  values?: readonly string[];
}

export const LABELS = {
  run_id: { description: 'Run id. Only on per-run series; removed when the run ends.' },
  kind: { description: 'Run kind.', values: RUN_KINDS },
  action: {
    description: 'Action a guardrail rule took (docs/guardrails.md).',
    values: GUARDRAIL_ACTIONS,
  },
  pool: { description: 'Worker pool name (operator config).' },
  worker: { description: 'Worker id (pod or container hostname).' },
  estimator: { description: 'KL estimator (docs/recipe.md §2).', values: KL_ESTIMATORS },
  stat: { description: 'Statistic over the step’s sampled tokens.', values: RATIO_STATS },
  component: { description: 'Data-mix component of the rollouts.', values: REWARD_COMPONENTS },
  phase: { description: 'Phase of a training step.', values: STEP_PHASES },
  lag: { description: 'Policy lag class of rollouts (fresh: lag 0).', values: LAG_CLASSES },
  subsystem: { description: 'Worker subsystem that failed or retried.', values: SUBSYSTEMS },
  engine: { description: 'Engine the worker sent the request to.', values: ENGINES },
  outcome: { description: 'Result of an engine request.', values: OUTCOMES },
  state: {
    description:
      'Queue state (anneal_queue_depth), worker state (anneal_pool_workers) or run state (anneal_runs*).',
  },
  route: { description: 'Fastify route pattern (e.g. /v1/runs/:id), never the raw URL.' },
  method: { description: 'HTTP method.' },
  status_code: { description: 'HTTP response status code.' },
  checkpoint: {
    description:
      'Eval checkpoint: its index in the spec `models` (at most 16 per run). Only on anneal_run_eval_* series.',
  },
  budget: {
    description:
      'Eval tool-call budget b (at most 101 per run, each 0–100). Only on anneal_run_eval_* series.',
  },
  tenant: { description: 'Tenant (operator config `tenants`; bounded by the config).' },
  endpoint: {
    description:
      'Inference endpoint (operator config `inference`; bounded by the config). Only on anneal_run_fleet_* series, with run_id.',
  },
  token_type: {
    description: 'Tokens sampled (prompt, completion), trained, or scored by the reward model.',
    values: TOKEN_TYPES,
  },
  item: { description: 'Price-table item a cost was spent on.', values: USAGE_ITEMS },
  app: { description: 'Anneal application.', values: APPS },
  version: { description: 'Anneal version string.' },
} as const satisfies Record<string, LabelDefinition>;

export type LabelName = keyof typeof LABELS;

/**
 * Label names that must never appear: per-prompt, per-rollout and per-user identifiers have
 * unbounded cardinality (and user ids are personal data). Such ids belong in logs and step records.
 */
export const FORBIDDEN_LABELS = [
  'prompt',
  'prompt_id',
  'rollout_id',
  'sample_id',
  'group_id',
  'request_id',
  'trace_id',
  'user',
  'user_id',
  'email',
  'token',
  'job_id',
] as const;
