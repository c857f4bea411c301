// Edge cases of completion parsing that the fake server's two shapes do not cover.
import { describe, expect, it } from 'vitest';
import { parseCompletion, parseTokenIdString } from './parse.ts';

const context = { engine: 'vLLM' as const, endpoint: 'e' };
const choice = (over: Record<string, unknown>): Record<string, unknown> => ({
  index: 0,
  text: 'ab',
  logprobs: {
    text_offset: [0, 1],
    token_logprobs: [-0.5, -1.5],
    tokens: ['a', 'b'],
    top_logprobs: null,
  },
  finish_reason: 'stop',
  stop_reason: null,
  token_ids: [10, 11],
  ...over,
});

describe('parseCompletion', () => {
  it('orders choices by index', () => {
    const body = { choices: [choice({ index: 1, token_ids: [7, 8] }), choice({ index: 0 })] };
    expect(parseCompletion(body, 2, context).map((s) => s.tokens)).toEqual([
      [10, 11],
      [7, 8],
    ]);
  });

  it('falls back to "token_id:" strings when token_ids is an explicit null', () => {
    const logprobs = { token_logprobs: [-1, -2], tokens: ['token_id:3', 'token_id:4'] };
    const [seq] = parseCompletion({ choices: [choice({ token_ids: null, logprobs })] }, 1, context);
    expect(seq).toEqual({
      tokens: [3, 4],
      logprobs: Float32Array.of(-1, -2),
      finishReason: 'stop',
    });
  });

  it('keeps the logprobs as float32, as vLLM computes them and the fast path reads them', () => {
    const logprobs = { token_logprobs: [-0.1, -1.2345677614212036], tokens: [] };
    const [seq] = parseCompletion({ choices: [choice({ logprobs })] }, 1, context);
    expect(seq?.logprobs).toBeInstanceOf(Float32Array);
    expect(Array.from(seq!.logprobs!)).toEqual([Math.fround(-0.1), -1.2345677614212036]);
  });

  it('maps the newer "repetition" finish reason to a truncation', () => {
    const [seq] = parseCompletion(
      { choices: [choice({ finish_reason: 'repetition' })] },
      1,
      context,
    );
    expect(seq?.finishReason).toBe('length');
  });

  it.each([
    [{ choices: [] }, 1, 'expected 1 choices (n), got 0'],
    [{ choices: [choice({ token_ids: [1] })] }, 1, 'has 1 token ids but 2 token_logprobs'],
    [{ choices: [choice({ logprobs: null })] }, 1, 'choices[0].logprobs is missing'],
    [{ choices: [choice({ token_ids: undefined })] }, 1, '"a" is not "token_id:<id>"'],
    [{ choices: [choice({ finish_reason: null })] }, 1, 'choices[0].finish_reason null'],
    [
      { choices: [choice({ logprobs: { token_logprobs: [null, -1], tokens: [] } })] },
      1,
      'token_logprobs[0] is null',
    ],
  ])('rejects malformed replies: %#', (body, n, message) => {
    expect(() => parseCompletion(body, n, context)).toThrow(message);
  });

  it('parses token_id strings strictly', () => {
    expect(parseTokenIdString('token_id:42')).toBe(42);
    expect(parseTokenIdString('token_id:')).toBeUndefined();
    expect(parseTokenIdString('token_id:4x')).toBeUndefined();
  });
});
