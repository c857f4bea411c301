import { describe, expect, it } from 'vitest';
import { parseEnv } from './env.ts';

describe('parseEnv', () => {
  it('applies defaults, converts numbers and freezes', () => {
    const env = parseEnv({ ANNEAL_PORT: '9000', UNRELATED: 'x' });
    expect(env.ANNEAL_PORT).toBe(9000);
    expect(env.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(env.ANNEAL_KEY_PREFIX).toBe('{anneal}');
    expect(env.ANNEAL_CONFIG).toBeUndefined();
    expect(env.ANNEAL_ARTIFACT_DIR).toBe('.anneal/artifacts');
    expect(Object.isFrozen(env)).toBe(true);
    expect('UNRELATED' in env).toBe(false);
  });

  it('names the bad variable', () => {
    expect(() => parseEnv({ ANNEAL_PORT: 'eighty' })).toThrow(/ANNEAL_PORT/);
    // a fraction is refused, not truncated (TypeBox's Convert alone made 8080.5 into 8080)
    expect(() => parseEnv({ ANNEAL_PORT: '8080.5' })).toThrow(/ANNEAL_PORT: expected integer/);
    expect(() => parseEnv({ ANNEAL_KEY_PREFIX: 'anneal' })).toThrow(/ANNEAL_KEY_PREFIX/);
    expect(() => parseEnv({ ANNEAL_TOKEN: 'short' })).toThrow(/ANNEAL_TOKEN/);
  });
});
