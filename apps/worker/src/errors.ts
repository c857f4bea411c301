// Coded errors of the worker runtime (docs/conventions.md: coded errors, small documented classes).

export const WORKER_ERROR_CODES = {
  config: 'ANNEAL_ERR_WORKER_CONFIG',
  runSetup: 'ANNEAL_ERR_RUN_SETUP',
  guardrailStop: 'ANNEAL_ERR_GUARDRAIL_STOP',
} as const;

/** Bad worker configuration (env var, operator config file); the process must not start. */
export class WorkerConfigError extends Error {
  readonly code = WORKER_ERROR_CODES.config;
  constructor(
    /** The env var or config field at fault, e.g. `ANNEAL_SLOTS` or `pool`. */
    readonly field: string,
    detail: string,
  ) {
    super(`${field}: ${detail}`);
    this.name = 'WorkerConfigError';
  }
}

/**
 * A run cannot be set up on this worker and retrying will not help: an endpoint the operator
 * config lacks, an invalid stored spec, no executor for the kind, an unresolvable model ref, or
 * (thrown by executors) a data source the catalogue lacks, tool limits the search tool refuses,
 * rubrics that need an LLM judge when none is configured. The run fails at once instead of
 * burning its attempts; the message names the spec field where there is one.
 */
export class RunSetupError extends Error {
  readonly code = WORKER_ERROR_CODES.runSetup;
  constructor(detail: string, options?: ErrorOptions) {
    super(detail, options);
    this.name = 'RunSetupError';
  }
}

/**
 * A guardrail stopped the run (docs/guardrails.md "Actions"): a rule with action `stop` fired, or
 * a rollback was due after the run had taken its `maxRollbacks`. The run fails at once with the
 * message (the rule and the values that fired it); a retry would meet the same numbers.
 */
export class GuardrailStopError extends Error {
  readonly code = WORKER_ERROR_CODES.guardrailStop;
  constructor(detail: string) {
    super(detail);
    this.name = 'GuardrailStopError';
  }
}

/**
 * A non-finite value stopped a step before its record was complete (a NaN sampler logprob,
 * trainer logprob or advantage, grpo/finite-inputs.ts): `metric` is the step-record key the value
 * stands for, so a guardrail on that metric can take the step back instead of failing the run.
 */
export class NonFiniteStepError extends RangeError {
  constructor(
    readonly metric: string,
    readonly value: number,
    detail: string,
  ) {
    super(detail);
    this.name = 'NonFiniteStepError';
  }
}
