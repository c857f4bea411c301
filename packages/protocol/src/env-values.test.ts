// envValues: variables converted to what their schema wants, an integer's text kept when it is
// not an integer (so validation refuses it instead of a truncated number passing).
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { envValues } from './env-values.ts';

const Env = Type.Object({
  COUNT: Type.Optional(Type.Integer({ minimum: 0 })),
  PORT: Type.Integer({ default: 8080 }),
  RATIO: Type.Optional(Type.Number()),
  NAME: Type.String({ default: 'x' }),
  FLAG: Type.Optional(Type.Boolean()),
});

describe('envValues', () => {
  it('converts, applies defaults and leaves out unknown and empty variables', () => {
    const values = envValues(Env, {
      COUNT: '12',
      RATIO: '0.25',
      FLAG: 'true',
      NAME: '',
      OTHER: 'y',
    });
    expect(values).toEqual({ COUNT: 12, PORT: 8080, RATIO: 0.25, NAME: 'x', FLAG: true });
    expect(Value.Check(Env, values)).toBe(true);
  });

  it('keeps the text of an integer variable that is not an integer, for validation to refuse', () => {
    for (const text of ['12.5', '1e3', '0x10', 'twelve']) {
      const values = envValues(Env, { COUNT: text, PORT: text });
      expect(values['COUNT']).toBe(text);
      expect(values['PORT']).toBe(text);
      expect(Value.Check(Env, values)).toBe(false);
    }
    expect(envValues(Env, { COUNT: '-3', PORT: '+80' })).toMatchObject({ COUNT: -3, PORT: 80 });
  });
});
