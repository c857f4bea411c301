// Route-level schema pieces shared by the route plugins.
import { Type } from '@sinclair/typebox';
import { ProblemDetails, RUN_ID_PATTERN, WORKER_ID_PATTERN } from '@anneal/protocol';

export const RunIdParams = Type.Object({ id: Type.String({ pattern: RUN_ID_PATTERN }) });
export const WorkerIdParams = Type.Object({ id: Type.String({ pattern: WORKER_ID_PATTERN }) });

/** Documented error responses (bodies are written by the problem handler). */
export const problemResponses = {
  '4xx': ProblemDetails,
  '5xx': ProblemDetails,
};
