// Pieces of the submission routes (POST /v1/runs, POST /v1/sweeps): the raw body text their
// parsers keep, and the Idempotency-Key header.
import type { FastifyRequest } from 'fastify';
import type { ErrorCode } from '@anneal/protocol';
import { AnnealError } from '../errors.ts';

export const SPEC_TYPES = [
  'application/json',
  'application/yaml',
  'application/x-yaml',
  'text/yaml',
];
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The body parsers hand over the raw text (the schema type is for documentation). */
export function documentText(body: unknown, code: ErrorCode, expected: string): string {
  if (typeof body !== 'string' || body.trim() === '') {
    throw new AnnealError(code, 'the request body is empty', [{ path: '', message: expected }]);
  }
  return body;
}

/** The request's Idempotency-Key, checked (1-255 visible ASCII characters); undefined: none. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const key = request.headers['idempotency-key'];
  if (key !== undefined && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
    throw new AnnealError(
      'ANNEAL_ERR_VALIDATION',
      'Idempotency-Key must be 1-255 visible ASCII characters',
      [{ path: '/headers/idempotency-key', message: 'expected 1-255 visible ASCII characters' }],
    );
  }
  return key;
}
