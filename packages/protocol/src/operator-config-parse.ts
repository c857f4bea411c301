// Validation of the operator config beyond its schema (cross-references, duplicate tokens),
// parsing from YAML, and the local-mode config.
import {
  type Issue,
  type Parsed,
  joinPointer,
  parseSourceText,
  schemaIssues,
  withDefaults,
} from './document.ts';
import { BUILTIN_DATASET_NAMES } from './datasets.ts';
import { TRAINER_BACKEND_TRAITS } from './capabilities.ts';
import { TRAINER_LOSSES, OperatorConfig } from './operator-config.ts';
import { RUN_KINDS } from './run-spec/common.ts';
import { guardrailRuleIssues } from './run-spec/guardrails.ts';
import { defaultMetricIssue } from './step-metric-records.ts';

/** Section of the config each `defaults` entry must name. */
const DEFAULT_TARGETS = {
  pool: 'pools',
  inference: 'inference',
  trainer: 'trainers',
  search: 'search',
  rewardModel: 'rewardModels',
  baseModel: 'baseModels',
  judge: 'judges',
} as const;

/** A Tinker-compatible backend has no value head (docs/engines.md): `bradley_terry` is an Anneal
 * extension only the embedded trainer serves, so declaring it would let rm runs in and fail them.
 * A declared `backend` fixes the reduction (TRAINER_BACKEND_TRAITS), and a SkyRL backend holds
 * retrieve_future 300 s, so a shorter poll timeout would time out every poll. */
function trainerIssues(config: OperatorConfig): Issue[] {
  return Object.entries(config.trainers).flatMap(([name, trainer]): Issue[] => {
    if (trainer.type !== 'tinker') return [];
    const issues: Issue[] = [];
    if (trainer.capabilities.losses.includes('bradley_terry')) {
      issues.push({
        path: joinPointer('trainers', name, 'capabilities', 'losses'),
        message:
          'a type: tinker trainer cannot declare bradley_terry (Tinker backends have no value-head loss); rm runs need a type: embedded trainer',
      });
    }
    const backend = trainer.backend;
    if (backend === undefined) return issues;
    const reduction = TRAINER_BACKEND_TRAITS[backend].reduction;
    if (trainer.capabilities.reduction !== reduction) {
      issues.push({
        path: joinPointer('trainers', name, 'capabilities', 'reduction'),
        message: `backend ${backend} reduces token losses as ${reduction}, not ${trainer.capabilities.reduction}; declare reduction: ${reduction} (docs/engines.md "Reduction")`,
      });
    }
    const poll = trainer.pollTimeoutSeconds;
    if (backend.startsWith('skyrl-') && poll !== undefined && poll <= 300) {
      issues.push({
        path: joinPointer('trainers', name, 'pollTimeoutSeconds'),
        message: `SkyRL holds each retrieve_future call up to 300 s before answering 408; pollTimeoutSeconds ${poll} would time out every poll (use more than 300, e.g. 330)`,
      });
    }
    return issues;
  });
}

/** vLLM's accepted `--max-lora-rank` values (`MaxLoRARanks`, vllm/config/lora.py@01230b40). */
export const VLLM_MAX_LORA_RANKS: readonly number[] = [1, 8, 16, 32, 64, 128, 256, 320, 512];

/** A vLLM endpoint's LoRA capacity as vLLM itself validates it (vllm/config/lora.py@01230b40
 * `LoRAConfig`): a rank from its list, and `max_cpu_loras >= max_loras` (it defaults to
 * `max_loras`, vLLM's own default 1, so a CPU cache size alone says nothing Anneal can check). */
function loraCapacityIssues(config: OperatorConfig): Issue[] {
  return Object.entries(config.inference).flatMap(([name, endpoint]): Issue[] => {
    if (endpoint.type !== 'vllm') return [];
    const issues: Issue[] = [];
    const at = (field: string) => joinPointer('inference', name, field);
    const rank = endpoint.maxLoraRank;
    if (rank !== undefined && !VLLM_MAX_LORA_RANKS.includes(rank)) {
      issues.push({
        path: at('maxLoraRank'),
        message: `vLLM accepts --max-lora-rank ${VLLM_MAX_LORA_RANKS.join(', ')} only, not ${rank}`,
      });
    }
    const { maxLoras, maxCpuLoras } = endpoint;
    if (maxCpuLoras !== undefined && maxLoras === undefined) {
      issues.push({
        path: at('maxCpuLoras'),
        message: 'maxCpuLoras needs maxLoras (the batch slots runs are admitted against)',
      });
    }
    if (maxCpuLoras !== undefined && maxLoras !== undefined && maxCpuLoras < maxLoras) {
      issues.push({
        path: at('maxCpuLoras'),
        message: `maxCpuLoras ${maxCpuLoras} is below maxLoras ${maxLoras} (vLLM refuses to start with --max-cpu-loras < --max-loras)`,
      });
    }
    if (endpoint.oversubscribe === true && maxLoras === undefined) {
      issues.push({
        path: at('oversubscribe'),
        message: 'oversubscribe needs maxLoras (there is nothing to oversubscribe)',
      });
    }
    return issues;
  });
}

/** A template chat format reads the model's tokenizer files (so it needs `tokenizer: {type: hf}`)
 * and replaces the marker format (so `toolFormat` would be ignored: refuse it). */
function baseModelIssues(config: OperatorConfig): Issue[] {
  return Object.entries(config.baseModels).flatMap(([name, model]): Issue[] => {
    if (model.chatFormat?.type !== 'template') return [];
    const issues: Issue[] = [];
    if (typeof model.tokenizer !== 'object') {
      issues.push({
        path: joinPointer('baseModels', name, 'chatFormat'),
        message:
          "chatFormat {type: template} needs tokenizer {type: hf, path, eosToken} (the model's " +
          'tokenizer.json; the template comes from its tokenizer_config.json)',
      });
    }
    if (model.toolFormat !== undefined) {
      issues.push({
        path: joinPointer('baseModels', name, 'toolFormat'),
        message:
          'toolFormat markers do not apply with chatFormat {type: template}; remove one of them',
      });
    }
    return issues;
  });
}

/** Default guardrail rules and `keepBest` must name a metric some run kind records (each then
 * applies only to the kinds that record it): a misspelt one would be dropped from every run. */
function defaultMetricIssues(config: OperatorConfig): Issue[] {
  const named: [string, string][] = (config.guardrails.rules ?? []).map((rule, i) => [
    rule.metric,
    joinPointer('guardrails', 'rules', i, 'metric'),
  ]);
  const keepBest = config.defaults.checkpointRetention?.keepBest;
  if (keepBest) {
    named.push([keepBest.metric, '/defaults/checkpointRetention/keepBest/metric']);
  }
  return named.flatMap(([metric, path]) => defaultMetricIssue(metric, path) ?? []);
}

function crossReferenceIssues(config: OperatorConfig): Issue[] {
  const issues: Issue[] = [];
  const known = (section: keyof typeof config) => Object.keys(config[section] as object);
  for (const [key, section] of Object.entries(DEFAULT_TARGETS)) {
    const name = config.defaults[key as keyof typeof DEFAULT_TARGETS];
    if (name !== undefined && !known(section).includes(name)) {
      const declared = known(section).join(', ') || 'none';
      issues.push({
        path: joinPointer('defaults', key),
        message: `unknown ${section} name '${name}' (declared: ${declared})`,
      });
    }
  }
  issues.push(...trainerIssues(config));
  issues.push(...baseModelIssues(config));
  issues.push(...loraCapacityIssues(config));
  issues.push(...guardrailRuleIssues(config.guardrails.rules ?? [], '/guardrails/rules'));
  issues.push(...defaultMetricIssues(config));
  for (const name of Object.keys(config.datasets)) {
    if (BUILTIN_DATASET_NAMES.includes(name)) {
      issues.push({
        path: joinPointer('datasets', name),
        message: `'${name}' is a built-in dataset name; register the file under another name`,
      });
    }
  }
  const hashes = new Map<string, number>();
  config.tokens.forEach((token, i) => {
    if (!(token.tenant in config.tenants)) {
      issues.push({
        path: joinPointer('tokens', i, 'tenant'),
        message: `unknown tenant '${token.tenant}' (declared: ${Object.keys(config.tenants).join(', ')})`,
      });
    }
    const first = hashes.get(token.sha256);
    if (first !== undefined) {
      issues.push({
        path: joinPointer('tokens', i, 'sha256'),
        message: `same token hash as /tokens/${first}`,
      });
    } else hashes.set(token.sha256, i);
  });
  return issues;
}

/** Validates a parsed operator config and applies defaults. */
export function validateOperatorConfig(
  value: unknown,
  lineOf?: (pointer: string) => number | undefined,
): Parsed<OperatorConfig> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, errors: [{ path: '', message: 'the operator config must be a mapping' }] };
  }
  const defaulted = withDefaults<OperatorConfig>(OperatorConfig, value);
  const issues = schemaIssues(OperatorConfig, defaulted, lineOf);
  if (issues.length > 0) return { ok: false, errors: issues };
  const crossIssues = crossReferenceIssues(defaulted).map((issue) => {
    const line = lineOf?.(issue.path);
    return line === undefined ? issue : { ...issue, line };
  });
  return crossIssues.length > 0
    ? { ok: false, errors: crossIssues }
    : { ok: true, value: defaulted };
}

/** Parses the operator config YAML (or JSON); errors name the JSON pointer and line. */
export function parseOperatorConfig(text: string): Parsed<OperatorConfig> {
  const source = parseSourceText(text);
  if (!source.ok) return source;
  return validateOperatorConfig(source.value.value, source.value.lineOf);
}

/** The single-tenant config `anneal up` uses without a config file: embedded engines only. */
export function localOperatorConfig(operatorTokenSha256: string): OperatorConfig {
  const allKinds = [...RUN_KINDS];
  const result = validateOperatorConfig({
    pools: { default: { slots: 1 } },
    inference: { embedded: { type: 'embedded' } },
    trainers: {
      embedded: {
        type: 'embedded',
        capabilities: { kinds: allKinds, losses: [...TRAINER_LOSSES], reduction: 'sum' },
      },
    },
    search: { local: { type: 'local' } },
    baseModels: { tiny: { model: 'embedded:tiny' } },
    defaults: {
      pool: 'default',
      inference: 'embedded',
      trainer: 'embedded',
      search: 'local',
      baseModel: 'tiny',
    },
    tenants: { default: { maxConcurrentRuns: 4 } },
    tokens: [
      { name: 'local-operator', sha256: operatorTokenSha256, role: 'operator', tenant: 'default' },
    ],
  });
  if (!result.ok)
    throw new Error(`local operator config is invalid: ${JSON.stringify(result.errors)}`);
  return result.value;
}
