// FastAPI/pydantic-style 422 checks for the fake trainer: `{detail: [{loc, msg, type}]}`,
// for the request models of skyrl/tinker/api.py (required fields and their types only).
import type { ValidationIssue } from '../../src/tinker/wire.ts';

type Rule = [
  path: string[],
  check: 'string' | 'integer' | 'object' | 'array' | 'pattern' | 'loss_fn',
];

const LOSS_FNS = ['cross_entropy', 'importance_sampling', 'ppo', 'bradley_terry'];
const NAME = /^[a-zA-Z0-9_-]+$/;

export const RULES: Record<string, Rule[]> = {
  create_session: [
    [['tags'], 'array'],
    [['sdk_version'], 'string'],
  ],
  session_heartbeat: [[['session_id'], 'string']],
  create_model: [
    [['session_id'], 'string'],
    [['base_model'], 'string'],
    [['lora_config'], 'object'],
    [['lora_config', 'rank'], 'integer'],
  ],
  get_info: [[['model_id'], 'string']],
  forward_backward: [
    [['model_id'], 'string'],
    [['forward_backward_input', 'data'], 'array'],
    [['forward_backward_input', 'loss_fn'], 'loss_fn'],
  ],
  forward: [
    [['model_id'], 'string'],
    [['forward_input', 'data'], 'array'],
    [['forward_input', 'loss_fn'], 'loss_fn'],
  ],
  optim_step: [
    [['model_id'], 'string'],
    [['adam_params'], 'object'],
  ],
  save_weights: [
    [['model_id'], 'string'],
    [['path'], 'pattern'],
  ],
  save_weights_for_sampler: [
    [['model_id'], 'string'],
    [['path'], 'pattern'],
  ],
  load_weights: [
    [['model_id'], 'string'],
    [['path'], 'string'],
  ],
  retrieve_future: [[['request_id'], 'string']],
  create_sampling_session: [
    [['session_id'], 'string'],
    [['sampling_session_seq_id'], 'integer'],
  ],
  asample: [
    [['num_samples'], 'integer'],
    [['prompt', 'chunks'], 'array'],
    [['sampling_params'], 'object'],
    [['sampling_params', 'max_tokens'], 'integer'],
  ],
};

export function validate(route: string, body: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [path, check] of RULES[route] ?? []) {
    let value: unknown = body;
    for (const key of path) value = (value as Record<string, unknown> | undefined)?.[key];
    const loc = ['body', ...path];
    if (value === undefined) {
      issues.push({ loc, msg: 'Field required', type: 'missing' });
      continue;
    }
    const issue = checkValue(check, value);
    if (issue) issues.push({ loc, ...issue });
  }
  return issues;
}

function checkValue(check: Rule[1], value: unknown): Omit<ValidationIssue, 'loc'> | undefined {
  switch (check) {
    case 'string':
      return typeof value === 'string'
        ? undefined
        : { msg: 'Input should be a valid string', type: 'string_type' };
    case 'integer':
      return Number.isInteger(value)
        ? undefined
        : { msg: 'Input should be a valid integer', type: 'int_type' };
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value)
        ? undefined
        : { msg: 'Input should be a valid dictionary', type: 'dict_type' };
    case 'array':
      return Array.isArray(value)
        ? undefined
        : { msg: 'Input should be a valid list', type: 'list_type' };
    case 'pattern':
      return typeof value === 'string' && NAME.test(value)
        ? undefined
        : { msg: `String should match pattern '${NAME.source}'`, type: 'string_pattern_mismatch' };
    case 'loss_fn':
      return LOSS_FNS.includes(value as string)
        ? undefined
        : {
            msg: `Input should be ${LOSS_FNS.map((l) => `'${l}'`).join(', ')}`,
            type: 'literal_error',
          };
  }
}
