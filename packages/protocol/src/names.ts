// Identifier schemas shared by run specs, operator config and the API.
import { Type } from '@sinclair/typebox';

/** Pattern of operator-declared resource names (pools, endpoints, models, tenants). */
export const RESOURCE_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';

/** A name an operator declared in the config file; runs refer to resources only by name. */
export const ResourceName = Type.String({
  pattern: RESOURCE_NAME_PATTERN,
  description: 'Lower-case name declared in the operator config (a-z, 0-9, _ and -; max 63).',
});

/** Pattern of base-model and dataset names (operator `baseModels`, `datasets`, the built-in
 * datasets): a resource name that may also hold `.`, as model names do (`qwen2.5-7b`). */
export const CATALOG_NAME_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,62}$';

/** Run ids are `run_` + a 26-character ULID (time-ordered, Crockford base32). */
export const RUN_ID_PATTERN = '^run_[0-9A-HJKMNP-TV-Z]{26}$';
export const RunId = Type.String({ pattern: RUN_ID_PATTERN, description: 'Run id (run_<ULID>).' });

/** Worker ids are chosen by workers (hostname + pid by default). */
export const WORKER_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$';
export const WorkerId = Type.String({ pattern: WORKER_ID_PATTERN, description: 'Worker id.' });

/** Label keys and values (like Kubernetes labels, simplified). */
export const LABEL_KEY_PATTERN = '^[a-z0-9]([a-z0-9_./-]{0,61}[a-z0-9])?$';
export const Labels = Type.Record(
  Type.String({ pattern: LABEL_KEY_PATTERN }),
  Type.String({ maxLength: 128 }),
  {
    default: {},
    additionalProperties: false,
    maxProperties: 32,
    description: 'Free-form key/value labels (filterable).',
  },
);

/** Names of per-step metrics, e.g. `train_inference_kl`, `reward/qa`. */
export const METRIC_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_:./-]{0,127}$';

/** A step-record key named in a run spec (guardrail rules, checkpoint retention): a record key
 * without `:`, so that no spec field but free text accepts an address (`redis://…`); no key of
 * the step-metric table has one. The key itself is checked against the table at submission. */
export const SPEC_METRIC_PATTERN = '^[A-Za-z_][A-Za-z0-9_./-]{0,127}$';
