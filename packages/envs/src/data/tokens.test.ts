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

  it('masks tool-output blocks inside a completion, markers included', () => {
    const completion =
      '<|call|>Vek<|/call|><|result|>Vek lives in Oru.<|/result|><|call|>Oru<|/call|><|result|>A town.<|/result|><|answer|>Oru';
    const ex = sftRowToTokens({ prompt: 'Where?', completion }, format);
    expect(trained(ex)).toBe('<|call|>Vek<|/call|><|call|>Oru<|/call|><|answer|>Oru<|eos|>');
    // the same trajectory as turns trains on exactly the same tokens
    const turns = sftRowToTokens(
      {
        prompt: 'Where?',
        turns: [
          { call: 'Vek' },
          { result: 'Vek lives in Oru.' },
          { call: 'Oru' },
          { result: 'A town.' },
          { answer: 'Oru' },
        ],
      },
      format,
    );
    expect(ex.tokens).toEqual(turns.tokens);
    expect(ex.lossMask).toEqual(turns.lossMask);
  });

  it('rejects a completion whose tool-output markers do not balance', () => {
    const row = (completion: string) => () => sftRowToTokens({ prompt: 'q', completion }, format);
    expect(row('<|result|>x<|answer|>y')).toThrow(
      /completion: <\|result\|> at token 0 has no closing/,
    );
    expect(row('<|answer|>y<|/result|>')).toThrow(/closes no tool output/);
    expect(row('<|result|>a<|result|>b<|/result|>')).toThrow(/inside the one opened at token 0/);
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
