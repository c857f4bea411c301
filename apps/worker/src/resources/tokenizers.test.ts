import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ByteTokenizer, loadHfTokenizer } from '@anneal/engines';
import { QWEN3_TOKENIZER_CONFIG, QWEN3_TOKENIZER_JSON } from '@anneal/engines/testing';
import type { HfTokenizerConfig } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { RunSetupError } from '../errors.ts';
import { chatFormatLoader, type TokenizerSource } from './tokenizers.ts';

const hf: HfTokenizerConfig = { type: 'hf', path: QWEN3_TOKENIZER_JSON, eosToken: '<|im_end|>' };
const qwen3 = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|im_end|>' });
const source = (extra: Partial<TokenizerSource>): TokenizerSource => ({
  baseModel: 'qwen3-8b',
  hf,
  ...extra,
});

describe('chatFormatLoader', () => {
  it('builds the template format from the tokenizer_config.json next to tokenizer.json', () => {
    const format = chatFormatLoader()(qwen3, source({ chatFormat: { type: 'template' } }));
    expect(format.kind).toBe('template');
    expect(format.stopTokenIds).toEqual([qwen3.specialTokenId('<|im_end|>')]);
    const prompt = qwen3.decode(format.encodePrompt('Hi'));
    expect(prompt).toContain('"name": "search_web"');
    expect(prompt.endsWith('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
  });

  it("stops at the model's generation_config.json eos ids too, as vLLM does (Qwen3 <|endoftext|>)", () => {
    // vllm/sampling_params.py@db573835 update_from_generation_config adds them to the stop set
    const dir = mkdtempSync(join(tmpdir(), 'anneal-model-'));
    copyFileSync(QWEN3_TOKENIZER_JSON, join(dir, 'tokenizer.json'));
    copyFileSync(QWEN3_TOKENIZER_CONFIG, join(dir, 'tokenizer_config.json'));
    writeFileSync(join(dir, 'generation_config.json'), '{"eos_token_id": [151645, 151643]}');
    const format = chatFormatLoader()(
      qwen3,
      source({
        hf: { ...hf, path: join(dir, 'tokenizer.json') },
        chatFormat: { type: 'template' },
      }),
    );
    const endOfText = qwen3.specialTokenId('<|endoftext|>') as number;
    expect(format.stopTokenIds).toEqual([qwen3.specialTokenId('<|im_end|>'), endOfText]);
    const turn = [...qwen3.encode('<think>\nx\n</think>\n\nOru'), endOfText];
    expect(format.parseTurn(turn)).toEqual({ kind: 'answer', answer: 'Oru' });
  });

  it('reads turns as served unless chatFormat.turnParser is lenient', () => {
    const text =
      '<tool_call>\n{"name": "search_web", "arguments": "{\\"query\\": \\"x\\"}"}\n</tool_call>';
    const turn = [...qwen3.encode(text), qwen3.specialTokenId('<|im_end|>') as number];
    const served = chatFormatLoader()(qwen3, source({ chatFormat: { type: 'template' } }));
    const lenient = chatFormatLoader()(
      qwen3,
      source({ chatFormat: { type: 'template', turnParser: 'lenient' } }),
    );
    expect(served.parseTurn(turn)).toMatchObject({ kind: 'tool_calls', calls: [{ ok: false }] });
    expect(lenient.parseTurn(turn)).toEqual({
      kind: 'tool_calls',
      calls: [{ ok: true, query: 'x' }],
    });
  });

  it('passes the system prompt and template args, from an explicit path', () => {
    const format = chatFormatLoader()(
      qwen3,
      source({
        chatFormat: {
          type: 'template',
          path: QWEN3_TOKENIZER_CONFIG,
          systemPrompt: 'Be brief.',
          templateArgs: { enable_thinking: false },
        },
      }),
    );
    const prompt = qwen3.decode(format.encodePrompt('Hi'));
    expect(prompt.startsWith('<|im_start|>system\nBe brief.\n\n# Tools')).toBe(true);
    expect(prompt.endsWith('assistant\n<think>\n\n</think>\n\n')).toBe(true);
  });

  it('keeps the marker format without a template chat format', () => {
    expect(chatFormatLoader()(new ByteTokenizer()).kind).toBe('markers');
    expect(chatFormatLoader()(new ByteTokenizer(), { baseModel: 'tiny' }).kind).toBe('markers');
  });

  it('names the operator-config field of a bad template setup', () => {
    const load = chatFormatLoader();
    const dir = mkdtempSync(join(tmpdir(), 'anneal-chat-'));
    const noTemplate = join(dir, 'tokenizer_config.json');
    writeFileSync(noTemplate, JSON.stringify({ eos_token: '<|im_end|>' }));
    const cases: [Partial<TokenizerSource>, RegExp][] = [
      [
        { chatFormat: { type: 'template', path: join(dir, 'missing.json') } },
        /^baseModels\.qwen3-8b\.chatFormat\.path: cannot read tokenizer config .*missing\.json/,
      ],
      [
        { chatFormat: { type: 'template', path: noTemplate } },
        /^baseModels\.qwen3-8b\.chatFormat\.path: .*chat_template: missing/,
      ],
      [
        { chatFormat: { type: 'template', endOfTurn: '</s>' } },
        /^baseModels\.qwen3-8b\.chatFormat\.endOfTurn: '<\/s>' is not a single added token/,
      ],
    ];
    for (const [extra, message] of cases) {
      expect(() => load(qwen3, source(extra))).toThrow(RunSetupError);
      expect(() => load(qwen3, source(extra))).toThrow(message);
    }
    expect(() =>
      load(new ByteTokenizer(), { baseModel: 'tiny', chatFormat: { type: 'template' } }),
    ).toThrow(/^baseModels\.tiny\.chatFormat: \{type: template\} needs tokenizer \{type: hf/);
  });
});
