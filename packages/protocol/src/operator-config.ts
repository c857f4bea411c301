// The operator config file (YAML): pools, named endpoints, models, tenants and tokens.
// Runs refer to these by name; URLs and secrets live only here (secrets as env-var names).
import { Type, type Static } from '@sinclair/typebox';
import { CheckpointRetention } from './checkpoints.ts';
import { LedgerConfig } from './ledger-config.ts';
import { SpecLimitsConfig } from './spec-limits.ts';
import { CATALOG_NAME_PATTERN, RESOURCE_NAME_PATTERN } from './names.ts';
import { RUN_KINDS } from './run-spec/common.ts';
import { DEFAULT_MAX_ROLLBACKS, GuardrailRule } from './run-spec/guardrails.ts';
import { TenantBudget, UsagePrices } from './usage.ts';

const Name = Type.String({ pattern: RESOURCE_NAME_PATTERN });
const Url = Type.String({ pattern: '^https?://[^\\s]+$', description: 'http(s) URL.' });
const EnvVarName = Type.String({
  pattern: '^[A-Z_][A-Z0-9_]*$',
  description: 'Name of an environment variable holding a secret (never the secret itself).',
});
/** The Tinker/SkyRL layout: `{checkpoints_base}/{model_id}/sampler_weights/{name}`. */
export const VLLM_DEFAULT_ADAPTER_LAYOUT = '{model_id}/sampler_weights/{name}';
/** Relative, no `..`, contains `{name}`; the only placeholders are `{name}` and `{model_id}`. */
export const VLLM_ADAPTER_LAYOUT_PATTERN =
  '^(?!/)(?!.*\\.\\.)(?=.*\\{name\\})(?:[A-Za-z0-9_.-]|/|\\{name\\}|\\{model_id\\})+$';
const named = <T extends ReturnType<typeof Type.Object> | ReturnType<typeof Type.Union>>(
  value: T,
  description: string,
) =>
  // `default: {}` on the value schema makes TypeBox apply defaults inside each entry.
  Type.Record(
    Type.String({ pattern: RESOURCE_NAME_PATTERN }),
    { ...value, default: {} },
    {
      additionalProperties: false,
      default: {},
      description,
    },
  );

export const PoolConfig = Type.Object(
  {
    slots: Type.Integer({
      minimum: 1,
      maximum: 1024,
      default: 1,
      description: 'Run slots per worker.',
    }),
    description: Type.Optional(Type.String()),
  },
  { additionalProperties: false, default: {} },
);

/** Where trainer sampler weights (`tinker://<model_id>/<name>`) are readable on the vLLM hosts
 * (docs/engines.md "Weight sync to the sampler"). */
export const VllmAdapterStorage = Type.Object(
  {
    root: Type.String({
      pattern: '^/[^\\s]*$',
      description: "Absolute path where the trainer's checkpoint base is mounted on every replica.",
    }),
    layout: Type.Optional(
      Type.String({
        pattern: VLLM_ADAPTER_LAYOUT_PATTERN,
        default: VLLM_DEFAULT_ADAPTER_LAYOUT,
        description:
          'Path of one adapter under `root`: relative, with `{name}` and optionally `{model_id}`.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** vLLM's `--logprobs-mode` values: what a sampled token's logprob is (vllm/config/model.py). */
/** What answers on a `type: vllm` endpoint's replicas: vLLM, or Anneal's embedded sampler server
 * (`anneal serve sampler`), which speaks vLLM's routes and loads ONNX exports only. */
export const VLLM_SERVERS = ['vllm', 'anneal-embedded'] as const;
export type VllmServer = (typeof VLLM_SERVERS)[number];

export const LOGPROBS_MODES = [
  'raw_logprobs',
  'processed_logprobs',
  'raw_logits',
  'processed_logits',
] as const;
export type LogprobsMode = (typeof LOGPROBS_MODES)[number];

/** Future polling of a Tinker-compatible endpoint (docs/engines.md "Futures"). */
const tinkerFutureSettings = {
  pollTimeoutSeconds: Type.Optional(
    Type.Number({
      exclusiveMinimum: 0,
      maximum: 3600,
      default: 330,
      description:
        'Timeout of one retrieve_future call. Must exceed how long the server holds it (SkyRL: 300 s).',
    }),
  ),
  operationDeadlineSeconds: Type.Optional(
    Type.Number({
      exclusiveMinimum: 0,
      maximum: 604_800,
      default: 3600,
      description:
        'How long one operation (forward_backward, optim_step, a save, a sample) may take from submission to result; network errors are retried until then.',
    }),
  ),
};

export const InferenceEndpointConfig = Type.Union([
  Type.Object(
    {
      type: Type.Literal('vllm'),
      replicas: Type.Array(Url, {
        minItems: 1,
        maxItems: 256,
        uniqueItems: true,
        description: 'Base URL of each vLLM server (one per pod; never a load balancer).',
      }),
      apiKeyEnv: Type.Optional(EnvVarName),
      server: Type.Optional(
        Type.Union(
          VLLM_SERVERS.map((v) => Type.Literal(v)),
          {
            description:
              'What answers on the replicas (undeclared: vllm): vLLM, or `anneal serve sampler` (anneal-embedded: the embedded ONNX sampler over vLLM\'s routes), which loads the embedded trainer\'s ONNX sampler exports and nothing else; runs are paired with trainers by it (docs/engines.md "Embedded sampler server").',
          },
        ),
      ),
      servedModel: Type.Optional(
        Type.String({
          minLength: 1,
          description: "vLLM's --served-model-name; default: the run's base model id.",
        }),
      ),
      maxModelLen: Type.Optional(
        Type.Integer({
          minimum: 2,
          description: "Context window; default: read from GET /v1/models ('max_model_len').",
        }),
      ),
      maxInFlight: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 100_000,
          default: 64,
          description: 'Requests in flight across all replicas (keeps the servers saturated).',
        }),
      ),
      requestTimeoutSeconds: Type.Optional(
        Type.Number({
          exclusiveMinimum: 0,
          maximum: 86_400,
          default: 600,
          description: 'Per-attempt timeout of one generation request.',
        }),
      ),
      retryAttempts: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 20,
          default: 4,
          description: 'Attempts per request on 5xx / connection errors (backoff + jitter).',
        }),
      ),
      readerThreads: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: 64,
          default: 0,
          description:
            'Threads per worker engine that read completion replies, so reading them leaves the event loop to the rest of the run (docs/engines.md "vLLM"); 0 reads them on the event loop.',
        }),
      ),
      adapters: Type.Optional(VllmAdapterStorage),
      maxLoraRank: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 1024,
          description:
            "The replicas' vLLM --max-lora-rank (vLLM's default 16; one of 1, 8, 16, 32, 64, 128, 256, 320, 512): runs whose lora.rank is higher are refused at submission.",
        }),
      ),
      maxLoras: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 1024,
          description:
            'The replicas\' vLLM --max-loras (adapters one batch can hold): the adapter slots the scheduler allocates to runs on this endpoint (docs/operations.md "Adapter capacity"). Undeclared: runs are not admitted by adapter slots.',
        }),
      ),
      maxCpuLoras: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 4096,
          description:
            "The replicas' vLLM --max-cpu-loras (adapters kept in CPU memory; vLLM's default: --max-loras). Must be >= maxLoras.",
        }),
      ),
      oversubscribe: Type.Optional(
        Type.Boolean({
          description:
            'Admit runs past maxLoras (their requests then wait for batch slots and re-read evicted adapters); default false.',
        }),
      ),
      schedulingPolicy: Type.Optional(
        Type.Union([Type.Literal('fcfs'), Type.Literal('priority')], {
          default: 'fcfs',
          description:
            "The replicas' vLLM --scheduling-policy. Under priority each request carries its run's priority (higher run priority first); under fcfs (vLLM's default) none is sent (docs/operations.md \"Fair share of an endpoint\").",
        }),
      ),
      maxNumSeqs: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 65_536,
          description:
            'The replicas\' vLLM --max-num-seqs (sequences one server runs at once). Declared: the runs on this endpoint share maxNumSeqs × replicas sequences in flight by weight, across every worker (docs/operations.md "Fair share of an endpoint"). Undeclared: each worker sends up to maxInFlight requests.',
        }),
      ),
      logprobsMode: Type.Optional(
        Type.Union(
          LOGPROBS_MODES.map((m) => Type.Literal(m)),
          {
            default: 'raw_logprobs',
            description:
              'The server\'s --logprobs-mode (vLLM\'s default raw_logprobs is taken before temperature and top-p). GRPO at temperature ≠ 1 needs processed_logprobs (docs/engines.md "Logprobs and temperature").',
          },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('tinker'),
      url: Url,
      apiKeyEnv: Type.Optional(EnvVarName),
      ...tinkerFutureSettings,
    },
    {
      additionalProperties: false,
      description:
        "A Tinker-compatible service's own sampling (asample): it samples the trainer's exports in place; weights never leave the service.",
    },
  ),
  Type.Object({ type: Type.Literal('embedded') }, { additionalProperties: false }),
]);

/** Backends a `type: tinker` trainer endpoint may declare (capabilities.ts TRAINER_BACKENDS). */
export const TINKER_BACKENDS = ['skyrl-jax', 'skyrl-fsdp', 'tinker', 'embedded'] as const;

export const TRAINER_LOSSES = [
  'cross_entropy',
  'importance_sampling',
  'ppo',
  'bradley_terry',
] as const;
export type TrainerLoss = (typeof TRAINER_LOSSES)[number];

export const TrainerCapabilitiesConfig = Type.Object(
  {
    kinds: Type.Array(Type.Union(RUN_KINDS.map((k) => Type.Literal(k))), {
      minItems: 1,
      uniqueItems: true,
    }),
    losses: Type.Array(Type.Union(TRAINER_LOSSES.map((l) => Type.Literal(l))), {
      minItems: 1,
      uniqueItems: true,
    }),
    reduction: Type.Union([Type.Literal('sum'), Type.Literal('mean_per_sequence')], {
      default: 'sum',
    }),
  },
  { additionalProperties: false },
);

export const TrainerEndpointConfig = Type.Union([
  Type.Object(
    {
      type: Type.Literal('tinker'),
      url: Url,
      apiKeyEnv: Type.Optional(EnvVarName),
      capabilities: TrainerCapabilitiesConfig,
      maxModels: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 4096,
          description:
            'Models the server holds at once (SkyRL JAX: max_lora_adapters - 1, 31 by default, docs/engines.md): the model slots the scheduler allocates to runs. Undeclared (hosted Tinker): unlimited.',
        }),
      ),
      oversubscribe: Type.Optional(
        Type.Boolean({ description: 'Admit runs past maxModels; default false.' }),
      ),
      backend: Type.Optional(
        Type.Union(
          TINKER_BACKENDS.map((b) => Type.Literal(b)),
          {
            description:
              'The server behind the URL (TRAINER_BACKEND_TRAITS: reduction, sampler export kind, grad clipping); embedded: `anneal serve trainer`, whose ONNX sampler exports only an anneal-embedded sampler loads. Undeclared: nothing backend-specific is assumed.',
          },
        ),
      ),
      ...tinkerFutureSettings,
    },
    { additionalProperties: false },
  ),
  Type.Object(
    { type: Type.Literal('embedded'), capabilities: TrainerCapabilitiesConfig },
    { additionalProperties: false },
  ),
]);

export const SearchBackendConfig = Type.Union([
  Type.Object(
    { type: Type.Literal('local'), corpus: Type.Optional(Type.String({ minLength: 1 })) },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Literal('searxng'), url: Url }, { additionalProperties: false }),
]);

export const RewardModelConfig = Type.Union([
  Type.Object(
    {
      type: Type.Literal('onnx'),
      path: Type.String({ minLength: 1 }),
      executionProvider: Type.Union([Type.Literal('cpu'), Type.Literal('cuda')], {
        default: 'cpu',
      }),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('run'),
      run: Type.String({ description: 'An Anneal rm run whose latest checkpoint is the model.' }),
    },
    { additionalProperties: false },
  ),
]);

/** A Hugging Face `tokenizer.json` (byte-level BPE: Qwen2, Llama-3, GPT-2) on the worker's disk. */
export const HfTokenizerConfig = Type.Object(
  {
    type: Type.Literal('hf'),
    path: Type.String({ minLength: 1, description: 'Path of tokenizer.json on the workers.' }),
    eosToken: Type.String({
      minLength: 1,
      description: "End-of-sequence token text, e.g. '<|im_end|>' or '<|endoftext|>'.",
    }),
  },
  { additionalProperties: false },
);

const marker = (description: string) => Type.String({ minLength: 1, description });

/** Marker strings of the tool-call format (packages/envs `ToolCallMarkers`, eos from the
 * tokenizer); each must be a single added token of the base model's tokenizer. */
export const ToolFormatConfig = Type.Object(
  {
    user: marker("Start of the user turn, e.g. '<|im_start|>'."),
    assistant: marker('Start of the assistant turn.'),
    callStart: marker("Start of a search_web call, e.g. '<tool_call>'."),
    callEnd: marker("End of a call (a stop token), e.g. '</tool_call>'."),
    resultStart: marker("Start of a tool output, e.g. '<tool_response>'."),
    resultEnd: marker("End of a tool output, e.g. '</tool_response>'."),
    answer: marker('The final answer follows.'),
  },
  { additionalProperties: false },
);

/** How rollouts talk to the model (docs/engines.md "Chat templates and tool calls"): `markers`
 * (the embedded format, markers from `toolFormat`) or `template` — the model's own Jinja
 * `chat_template`, `search_web` declared as a JSON-schema tool, Hermes `<tool_call>` JSON. */
export const ChatFormatConfig = Type.Union([
  Type.Object({ type: Type.Literal('markers') }, { additionalProperties: false }),
  Type.Object(
    {
      type: Type.Literal('template'),
      path: Type.Optional(
        Type.String({
          minLength: 1,
          description:
            'tokenizer_config.json holding `chat_template`, on the workers (default: the one ' +
            'next to tokenizer.path).',
        }),
      ),
      endOfTurn: Type.Optional(
        marker(
          "End-of-turn token (a stop token); default: read from the template, e.g. '<|im_end|>'.",
        ),
      ),
      systemPrompt: Type.Optional(Type.String({ minLength: 1, description: 'System message.' })),
      turnParser: Type.Optional(
        Type.Union([Type.Literal('serving'), Type.Literal('lenient')], {
          description:
            "How a sampled turn is read: 'serving' (default) as vLLM's qwen3 reasoning and " +
            "hermes tool parsers deliver it; 'lenient' reads every <tool_call> on its own " +
            '(docs/engines.md "Reading a turn as the server does").',
        }),
      ),
      templateArgs: Type.Optional(
        Type.Record(
          Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
          Type.Union([Type.String(), Type.Number(), Type.Boolean()]),
          {
            additionalProperties: false,
            description: "Template variables, e.g. Qwen3's {enable_thinking: false}.",
          },
        ),
      ),
    },
    { additionalProperties: false },
  ),
]);

export const BaseModelConfig = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      description: 'Identifier the engines load, e.g. `Qwen/Qwen3-8B` or `embedded:tiny`.',
    }),
    tokenizer: Type.Optional(
      Type.Union([
        Type.String({
          minLength: 1,
          description: 'A tokenizer built into the worker: `byte` or an embedded model id.',
        }),
        HfTokenizerConfig,
      ]),
    ),
    toolFormat: Type.Optional(ToolFormatConfig),
    chatFormat: Type.Optional(ChatFormatConfig),
  },
  { additionalProperties: false },
);

export const DATASET_FORMATS = ['qa', 'rubric', 'sft', 'preference'] as const;
export type DatasetFormat = (typeof DATASET_FORMATS)[number];

/** A JSONL dataset file runs name in `data.mix` (or eval `datasets`); validated row by row
 * (packages/envs `validateJsonl`) when the control plane starts and when a worker loads it. */
export const DatasetConfig = Type.Object(
  {
    kind: Type.Union(
      DATASET_FORMATS.map((k) => Type.Literal(k)),
      {
        description:
          'Row format: qa (grpo prompts, eval), rubric (grpo prompts), sft (sft), preference (rm).',
      },
    ),
    path: Type.String({
      minLength: 1,
      description: 'JSONL file, readable by the control plane and every worker at this path.',
    }),
  },
  { additionalProperties: false },
);

/** What a judge gets for the optional fields of its `JudgeConfig` entry left out (applied by
 * @anneal/envs `LlmJudge`, the one place they are read). */
export const JUDGE_DEFAULTS = Object.freeze({ maxTokens: 256, timeoutSeconds: 60 });

/** An OpenAI-compatible chat endpoint grading rubrics that have no programmatic check. */
export const JudgeConfig = Type.Object(
  {
    url: Url,
    model: Type.String({ minLength: 1, description: 'Model name sent in each request.' }),
    apiKeyEnv: Type.Optional(EnvVarName),
    maxTokens: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65_536,
        description: `Completion token limit (${JUDGE_DEFAULTS.maxTokens}).`,
      }),
    ),
    timeoutSeconds: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 3600,
        description: `Per request (${JUDGE_DEFAULTS.timeoutSeconds}).`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const RateLimitConfig = Type.Object(
  {
    max: Type.Integer({ minimum: 1, description: 'Requests per window per token.' }),
    windowSeconds: Type.Integer({ minimum: 1, default: 60 }),
  },
  { additionalProperties: false },
);

export const TenantConfig = Type.Object(
  {
    maxConcurrentRuns: Type.Integer({
      minimum: 1,
      default: 4,
      description: 'Runs of this tenant that may be running at once; the rest wait queued.',
    }),
    weight: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1000,
      default: 1,
      description:
        'Share weight of each run of this tenant on an endpoint that declares maxNumSeqs: a run gets capacity × weight ÷ the weights of the runs using the endpoint (docs/operations.md "Fair share of an endpoint").',
    }),
    budget: Type.Optional(TenantBudget),
  },
  { additionalProperties: false, default: {} },
);

export const ROLES = ['viewer', 'submitter', 'operator'] as const;
export type Role = (typeof ROLES)[number];

export const TokenConfig = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, description: 'Who holds it (logs only).' }),
    sha256: Type.String({
      pattern: '^[0-9a-f]{64}$',
      description: 'Lower-case hex SHA-256 of the bearer token.',
    }),
    role: Type.Union(ROLES.map((r) => Type.Literal(r))),
    tenant: Name,
    rateLimit: Type.Optional(RateLimitConfig),
  },
  { additionalProperties: false },
);

export const DefaultsConfig = Type.Object(
  {
    pool: Type.Optional(Name),
    inference: Type.Optional(Name),
    trainer: Type.Optional(Name),
    search: Type.Optional(Name),
    rewardModel: Type.Optional(Name),
    judge: Type.Optional(Name),
    baseModel: Type.Optional(Type.String({ pattern: CATALOG_NAME_PATTERN })),
    checkpointRetention: Type.Optional(CheckpointRetention),
  },
  { additionalProperties: false, default: {} },
);

/** Guardrail defaults every training run gets unless its spec says `guardrails.defaults: false`
 * (docs/guardrails.md "Defaults"). */
export const GuardrailDefaultsConfig = Type.Object(
  {
    rules: Type.Optional(
      Type.Array(GuardrailRule, {
        maxItems: 32,
        description:
          'Replace the built-in default rules (non-finite loss, gradient norm, advantages -> rollback).',
      }),
    ),
    maxRollbacks: Type.Integer({
      minimum: 0,
      maximum: 100,
      default: DEFAULT_MAX_ROLLBACKS,
      description: 'Rollbacks a run may take before it fails, unless its spec says.',
    }),
  },
  { additionalProperties: false, default: {} },
);

export const OperatorConfig = Type.Object(
  {
    pools: Type.Record(Type.String({ pattern: RESOURCE_NAME_PATTERN }), PoolConfig, {
      additionalProperties: false,
      minProperties: 1,
    }),
    inference: named(InferenceEndpointConfig, 'Inference endpoints (vLLM replicas or embedded).'),
    trainers: named(TrainerEndpointConfig, 'Trainer endpoints with declared capabilities.'),
    search: named(SearchBackendConfig, 'Search backends for the search_web tool.'),
    rewardModels: named(RewardModelConfig, 'Preference (reward) models.'),
    baseModels: Type.Record(Type.String({ pattern: CATALOG_NAME_PATTERN }), BaseModelConfig, {
      additionalProperties: false,
      default: {},
    }),
    datasets: Type.Record(Type.String({ pattern: CATALOG_NAME_PATTERN }), DatasetConfig, {
      additionalProperties: false,
      default: {},
      description: 'JSONL datasets runs may name next to the built-in ones.',
    }),
    judges: named(JudgeConfig, 'LLM judges (OpenAI-compatible chat endpoints) for rubrics.'),
    defaults: DefaultsConfig,
    tenants: Type.Record(Type.String({ pattern: RESOURCE_NAME_PATTERN }), TenantConfig, {
      additionalProperties: false,
      minProperties: 1,
    }),
    tokens: Type.Array(TokenConfig, { minItems: 1 }),
    limits: SpecLimitsConfig,
    guardrails: GuardrailDefaultsConfig,
    ledger: LedgerConfig,
    prices: UsagePrices,
    rateLimit: Type.Object(
      {
        max: Type.Integer({ minimum: 1, default: 600 }),
        windowSeconds: Type.Integer({ minimum: 1, default: 60 }),
      },
      { additionalProperties: false, default: {}, description: 'Default per-token rate limit.' },
    ),
  },
  { additionalProperties: false },
);
export type OperatorConfig = Static<typeof OperatorConfig>;
export type TokenConfig = Static<typeof TokenConfig>;
export type DatasetConfig = Static<typeof DatasetConfig>;
export type JudgeConfig = Static<typeof JudgeConfig>;
export type TrainerEndpointConfig = Static<typeof TrainerEndpointConfig>;
export type InferenceEndpointConfig = Static<typeof InferenceEndpointConfig>;
export type BaseModelConfig = Static<typeof BaseModelConfig>;
export type HfTokenizerConfig = Static<typeof HfTokenizerConfig>;
export type ToolFormatConfig = Static<typeof ToolFormatConfig>;
export type ChatFormatConfig = Static<typeof ChatFormatConfig>;
