import { mkdtempSync, writeFileSync } from 'node:fs';
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
