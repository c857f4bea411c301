import { ByteTokenizer } from '@anneal/engines';
import { describe, expect, it } from 'vitest';
import { createToolCallFormat } from '../format/toolCallFormat.ts';
import { preferenceRowToTokens, sftRowToTokens } from './tokens.ts';

const tok = new ByteTokenizer();
const format = createToolCallFormat(tok);
const trained = (ex: { tokens: number[]; lossMask: number[] }) =>
  tok.decode(ex.tokens.filter((_, i) => ex.lossMask[i] === 1));

describe('dataset rows to tokens', () => {
  it('masks the prompt and tool results of SFT turns', () => {
    const ex = sftRowToTokens(
      {
        prompt: 'Where does Vek live?',
        turns: [{ call: 'Vek' }, { result: 'Vek lives in Oru.' }, { answer: 'Oru' }],
      },
      format,
    );
    expect(tok.decode(ex.tokens)).toBe(
      '<|user|>Where does Vek live?<|assistant|><|call|>Vek<|/call|><|result|>Vek lives in Oru.<|/result|><|answer|>Oru<|eos|>',
    );
    expect(trained(ex)).toBe('<|call|>Vek<|/call|><|answer|>Oru<|eos|>');
    expect(ex.promptLength).toBe(22);
  });

  it('trains on a whole completion and appends eos when missing', () => {
    const ex = sftRowToTokens({ prompt: 'hi', completion: '<|answer|>hello' }, format);
    expect(trained(ex)).toBe('<|answer|>hello<|eos|>');
    expect(
      sftRowToTokens({ prompt: 'hi', completion: '<|answer|>x<|eos|>' }, format).tokens.filter(
        (t) => t === tok.eosTokenId,
      ),
    ).toHaveLength(1);
  });

  it('encodes preference pairs', () => {
    const pair = preferenceRowToTokens(
      { prompt: 'q', chosen: '<|answer|>Oru<|eos|>', rejected: '<|answer|>Oru Oru<|eos|>' },
      format,
    );
    expect(pair.prompt).toEqual(format.encodePrompt('q'));
    expect(pair.chosen[0]).toBe(format.ids.answer);
    expect(pair.rejected.at(-1)).toBe(tok.eosTokenId);
  });
});
