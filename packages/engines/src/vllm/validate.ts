// Sample requests are checked before any HTTP so a bad rollout config fails with the field.
import type { SampleRequest } from '../types.ts';

export function validateSampleRequest(request: SampleRequest, endpoint: string): void {
  const fail = (field: string, why: string): never => {
    throw new RangeError(`vLLM endpoint '${endpoint}': sample request \`${field}\` ${why}`);
  };
  if (request.prompt.length === 0) fail('prompt', 'is empty');
  request.prompt.forEach((id, i) => {
    if (!Number.isInteger(id) || id < 0) fail(`prompt[${i}]`, `is not a token id: ${id}`);
  });
  if (!Number.isInteger(request.n) || request.n < 1)
    fail('n', `must be an integer >= 1, got ${request.n}`);
  if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1) {
    fail('maxTokens', `must be an integer >= 1, got ${request.maxTokens}`);
  }
  if (!Number.isFinite(request.temperature) || request.temperature < 0) {
    fail('temperature', `must be >= 0, got ${request.temperature}`);
  }
  if (!(request.topP > 0 && request.topP <= 1))
    fail('topP', `must be in (0, 1], got ${request.topP}`);
  if (request.seed !== undefined && !Number.isInteger(request.seed)) {
    fail('seed', `must be an integer, got ${request.seed}`);
  }
  if (request.priority !== undefined && !Number.isSafeInteger(request.priority)) {
    fail('priority', `must be an integer, got ${request.priority}`);
  }
  request.stopTokenIds?.forEach((id, i) => {
    if (!Number.isInteger(id) || id < 0) fail(`stopTokenIds[${i}]`, `is not a token id: ${id}`);
  });
}
