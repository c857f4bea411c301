// The error-code catalogue: every ANNEAL_ERR_* the API returns, its HTTP status and title.
// docs/api.md documents each code (a test enforces it).
import { Type, type Static } from '@sinclair/typebox';

export const ERROR_CODES = {
  ANNEAL_ERR_VALIDATION: { status: 400, title: 'Request validation failed' },
  ANNEAL_ERR_RUN_SPEC_INVALID: { status: 400, title: 'Run spec is invalid' },
  ANNEAL_ERR_RUN_SPEC_OVER_LIMIT: { status: 400, title: 'Run spec exceeds an operator limit' },
  ANNEAL_ERR_SWEEP_INVALID: { status: 400, title: 'Sweep document is invalid' },
  ANNEAL_ERR_SWEEP_TOO_LARGE: { status: 400, title: 'Sweep grid expands into too many runs' },
  ANNEAL_ERR_UNKNOWN_RESOURCE: { status: 400, title: 'Run names an unknown resource' },
  ANNEAL_ERR_TRAINER_CAPABILITY: { status: 400, title: 'Trainer endpoint cannot run this spec' },
  ANNEAL_ERR_UNAUTHENTICATED: { status: 401, title: 'Missing or invalid bearer token' },
  ANNEAL_ERR_FORBIDDEN: { status: 403, title: 'Token role does not allow this operation' },
  ANNEAL_ERR_NOT_FOUND: { status: 404, title: 'No such route' },
  ANNEAL_ERR_RUN_NOT_FOUND: { status: 404, title: 'Run not found' },
  ANNEAL_ERR_SWEEP_NOT_FOUND: { status: 404, title: 'Sweep not found' },
  ANNEAL_ERR_WORKER_NOT_FOUND: { status: 404, title: 'Worker not found' },
  ANNEAL_ERR_CHECKPOINT_NOT_FOUND: { status: 404, title: 'Checkpoint not found' },
  ANNEAL_ERR_IDEMPOTENCY_CONFLICT: {
    status: 409,
    title: 'Idempotency-Key reused with a different request body',
  },
  ANNEAL_ERR_RUN_FINISHED: { status: 409, title: 'Run has already finished' },
  ANNEAL_ERR_INVALID_TRANSITION: { status: 409, title: 'Illegal run state transition' },
  ANNEAL_ERR_EXPORT_UNAVAILABLE: {
    status: 409,
    title: 'Checkpoint files cannot be exported from here',
  },
  ANNEAL_ERR_REQUEST_TIMEOUT: { status: 408, title: 'Request not received in time' },
  ANNEAL_ERR_PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body too large' },
  ANNEAL_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported content type' },
  ANNEAL_ERR_RATE_LIMITED: { status: 429, title: 'Rate limit exceeded' },
  ANNEAL_ERR_TENANT_BUDGET_EXHAUSTED: {
    status: 402,
    title: "Tenant's budget for this period is spent",
  },
  ANNEAL_ERR_RUN_BUDGET_EXHAUSTED: { status: 402, title: "Run's own budget is spent" },
  ANNEAL_ERR_HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large' },
  ANNEAL_ERR_INTERNAL: { status: 500, title: 'Internal error' },
  ANNEAL_ERR_UNAVAILABLE: { status: 503, title: 'A dependency (Redis) is unavailable' },
  ANNEAL_ERR_NOT_REPLICATED: { status: 503, title: 'Write not confirmed by a Redis replica' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** RFC 9457 problem type URI of a code. */
export function problemType(code: ErrorCode): string {
  return `urn:anneal:error:${code}`;
}

/** RFC 9457 problem details, as every 4xx/5xx response body (application/problem+json). */
export const ProblemDetails = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ description: 'Stable ANNEAL_ERR_* code.' }),
    detail: Type.Optional(Type.String()),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          path: Type.String({ description: 'JSON pointer of the offending field.' }),
          message: Type.String(),
          line: Type.Optional(Type.Integer()),
        }),
      ),
    ),
  },
  { description: 'RFC 9457 problem details (application/problem+json).' },
);
export type ProblemDetails = Static<typeof ProblemDetails>;
