// SFT `turns` rows on the real Qwen3 files: the ids are a rollout's layout in the template (prompt,
// sampled-style assistant turns, the template's tool-result deltas), and only assistant turns
// are trained.
import { loadChatTemplate, loadHfTokenizer, type ChatMessage } from '@anneal/engines';
import {
  QWEN3_TOKENIZER_CONFIG,
  QWEN3_TOKENIZER_JSON,
  qwen3Reference,
} from '@anneal/engines/testing';
import { describe, expect, it } from 'vitest';
import { FormatError } from '../format/toolCallFormat.ts';
import { hermesCallText, templateSftRowToTokens } from './sftTokens.ts';
import { createTemplateChatFormat } from './templateFormat.ts';
import { searchWebToolSpec } from './toolCalls.ts';

const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
const template = loadChatTemplate(QWEN3_TOKENIZER_CONFIG);
const reference = qwen3Reference();
const format = createTemplateChatFormat({ tokenizer, template });
const IM_END = format.endOfTurnId;

describe('SFT turns in the Qwen3 chat template', () => {
  it('lays the row out as a rollout: template prompt and deltas masked, assistant turns trained', () => {
    const row = {
      prompt: 'Where does Vek live?',
      turns: [{ call: 'Vek 住址' }, { result: '1. Vek lives in Oru.' }, { answer: 'Oru' }],
    };
    const { tokens, lossMask, promptLength } = templateSftRowToTokens(row, format);
    const messages: ChatMessage[] = [
      { role: 'user', content: row.prompt },
      { role: 'assistant', content: hermesCallText('Vek 住址') },
      { role: 'tool', content: '1. Vek lives in Oru.' },
    ];
    const tools = [searchWebToolSpec()];
    const prompt = reference.encode(
      template.render(messages.slice(0, 1), { tools, addGenerationPrompt: true }),
    );
    const upToAnswer = reference.encode(
      template.render(messages, { tools, addGenerationPrompt: true }),
    );
    const answer = [...reference.encode('Oru'), IM_END];
    expect(tokens).toEqual([...upToAnswer, ...answer]);
    expect(promptLength).toBe(prompt.length);
    const call = [...reference.encode(hermesCallText('Vek 住址')), IM_END];
    const delta = upToAnswer.length - prompt.length - call.length;
    expect(lossMask).toEqual([
      ...prompt.map(() => 0),
      ...call.map(() => 1),
      ...new Array<number>(delta).fill(0),
      ...answer.map(() => 1),
    ]);
    expect(tokenizer.decode(tokens.slice(upToAnswer.length - delta, upToAnswer.length))).toBe(
      '\n<|im_start|>user\n<tool_response>\n1. Vek lives in Oru.\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    // the trained call turn reads back as the call
    expect(format.parseTurn(call)).toEqual({
      kind: 'tool_calls',
      calls: [{ ok: true, query: 'Vek 住址' }],
    });
  });

  it('refuses completion rows and turns the format would read differently', () => {
    expect(() => templateSftRowToTokens({ prompt: 'q', completion: 'a' }, format)).toThrow(
      /^completion: marker-format text cannot be rendered/,
    );
    const answerWithCall = { prompt: 'q', turns: [{ answer: hermesCallText('x') }] };
    expect(() => templateSftRowToTokens(answerWithCall, format)).toThrow(
      new FormatError('turns[0].answer: the chat format would not read this turn back as written'),
    );
    const answerWithStop = { prompt: 'q', turns: [{ answer: 'a<|im_end|>b' }] };
    expect(() => templateSftRowToTokens(answerWithStop, format)).toThrow(
      'turns[0].answer: contains a stop token of the chat format',
    );
  });
});
