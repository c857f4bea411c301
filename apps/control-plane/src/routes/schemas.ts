// Route-level schema pieces shared by the route plugins.
import type { preValidationHookHandler } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ProblemDetails, RUN_ID_PATTERN, WORKER_ID_PATTERN } from '@anneal/protocol';

export const RunIdParams = Type.Object({ id: Type.String({ pattern: RUN_ID_PATTERN }) });
export const WorkerIdParams = Type.Object({ id: Type.String({ pattern: WORKER_ID_PATTERN }) });

/**
 * Documented error responses, as application/problem+json (bodies are written by the problem
 * handler, plugins/problem.ts, with its own serializer).
 */
const problemContent = { content: { 'application/problem+json': { schema: ProblemDetails } } };
export const problemResponses = {
  '4xx': { description: 'Client error (RFC 9457 problem details)', ...problemContent },
  '5xx': { description: 'Server error (RFC 9457 problem details)', ...problemContent },
};

/** A string enum as one JSON Schema `enum` (one clear error, unlike a union of literals). */
export function StringEnum<T extends string>(values: readonly T[], description?: string) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description && { description }) });
}

/** Optional JSON bodies: a request without a body validates as `{}`. */
export const emptyBodyAsObject: preValidationHookHandler = (request, _reply, done) => {
  if (request.body === undefined || request.body === null) request.body = {};
  done();
};

/** Paging of a run's file records (rollouts, eval items): keyset cursor, 1–200 per page. */
export const pageQueryFields = {
  order: Type.Optional(
    StringEnum(['asc', 'desc'] as const, 'Sort direction (default asc); nulls last.'),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  cursor: Type.Optional(
    Type.String({
      maxLength: 1024,
      description: '`nextCursor` of the previous page, with the same other parameters.',
    }),
  ),
};
