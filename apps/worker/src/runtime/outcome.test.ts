import { describe, expect, it } from 'vitest';
import { ENGINE_ERROR_CODES, EngineError } from '@anneal/engines';
import { isPermanentEngineError } from './outcome.ts';

const engineError = (
  code: (typeof ENGINE_ERROR_CODES)[keyof typeof ENGINE_ERROR_CODES],
  status?: number,
  retryable = false,
) =>
  new EngineError(
    code,
    { engine: 'vLLM', endpoint: 'e', ...(status !== undefined && { status }) },
    'x',
    {
      retryable,
    },
  );

describe('isPermanentEngineError', () => {
  it('fails a run at once on refusals a retry would meet again', () => {
    expect(isPermanentEngineError(engineError(ENGINE_ERROR_CODES.badAdapter, 500))).toBe(true);
    expect(isPermanentEngineError(engineError(ENGINE_ERROR_CODES.validation, 422))).toBe(true);
    expect(isPermanentEngineError(engineError(ENGINE_ERROR_CODES.http, 401))).toBe(true);
  });

  it('retries passing faults and anything that is not an engine refusal', () => {
    expect(isPermanentEngineError(engineError(ENGINE_ERROR_CODES.http, 500, true))).toBe(false);
    expect(isPermanentEngineError(engineError(ENGINE_ERROR_CODES.http, 400))).toBe(false);
    expect(isPermanentEngineError(engineError(ENGINE_ERROR_CODES.timeout))).toBe(false);
    expect(isPermanentEngineError(engineError(ENGINE_ERROR_CODES.futureFailed))).toBe(false);
    expect(isPermanentEngineError(new Error('disk full'))).toBe(false);
  });
});
