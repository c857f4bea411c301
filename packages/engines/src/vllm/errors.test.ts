// vLLM's context-overflow wordings, verbatim from the servers (fixtures built from the f-strings
// of v0.11.x `serving_engine.py` and main's `vllm/renderers/params.py`).
import { describe, expect, it } from 'vitest';
import type { HttpReply } from '../http/request.ts';
import { contextLimitOf } from './context-window.ts';
import { isContextOverflow, overflowWindowOf } from './errors.ts';

const reply = (status: number, json: unknown): HttpReply =>
  ({ status, json, text: JSON.stringify(json) }) as HttpReply;

const V011 =
  "This model's maximum context length is 32768 tokens. However, you requested 33792 tokens " +
  '(32768 in the messages, 1024 in the completion). Please reduce the length of the messages ' +
  'or completion.';
const CURRENT =
  "You passed 31745 input tokens and requested 1024 output tokens. However, the model's " +
  'context length is only 32768 tokens, resulting in a maximum input length of 31744 tokens. ' +
  'Please reduce the length of the input prompt. (parameter=input_tokens, value=31745)';
const CURRENT_MAX_TOKENS =
  'max_tokens=40000cannot be greater than max_model_len=max_total_tokens=32768. Please ' +
  'request fewer output tokens. (parameter=max_tokens, value=40000)';

describe('context overflow replies', () => {
  it('reads the window from every wording, in both error envelopes', () => {
    for (const message of [V011, CURRENT, CURRENT_MAX_TOKENS]) {
      expect(overflowWindowOf(message), message).toBe(32768);
      const newEnvelope = reply(400, {
        error: { message, type: 'BadRequestError', param: 'input_tokens', code: 400 },
      });
      const oldEnvelope = reply(400, {
        object: 'error',
        message,
        type: 'BadRequestError',
        code: 400,
      });
      for (const r of [newEnvelope, oldEnvelope]) {
        expect(isContextOverflow(r)).toBe(true);
        expect(contextLimitOf(r)).toBe(32768);
      }
    }
  });

  it('is not fooled by other 400s or by the wording on another status', () => {
    const other = reply(400, { error: { message: 'top_k must be -1', type: 'BadRequestError' } });
    expect(isContextOverflow(other)).toBe(false);
    expect(overflowWindowOf('top_k must be -1')).toBeUndefined();
    expect(isContextOverflow(reply(500, { error: { message: CURRENT } }))).toBe(false);
  });
});
