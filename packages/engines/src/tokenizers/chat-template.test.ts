import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatTemplateFromConfig, loadChatTemplate } from './chat-template.ts';
import { TokenizerConfigError } from './hf-config.ts';
import { QWEN3_TOKENIZER_CONFIG } from '../../test/tokenizers/qwen3.ts';

const SIMPLE =
  '{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}' +
  '{% if tools %}<tools>{{ tools | length }}</tools>{% endif %}' +
  '{% if add_generation_prompt %}[assistant]{% if think %}<t>{% endif %}{% endif %}';

describe('chatTemplateFromConfig', () => {
  it('renders messages, tools, the generation prompt, special tokens and template args', () => {
    const template = chatTemplateFromConfig(
      { chat_template: SIMPLE, bos_token: { content: '<s>' }, eos_token: '</s>' },
      'cfg.json',
    );
    const messages = [{ role: 'user' as const, content: 'hi' }];
    expect(template.render(messages, { addGenerationPrompt: false })).toBe('<s>[user]hi</s>');
    const tool = {
      type: 'function' as const,
      function: { name: 'f', description: 'd', parameters: { type: 'object' } },
    };
    expect(
      template.render(messages, {
        addGenerationPrompt: true,
        tools: [tool],
        args: { think: true },
      }),
    ).toBe('<s>[user]hi</s><tools>1</tools>[assistant]<t>');
  });

  it("picks the 'tool_use' template of a list, else 'default'", () => {
    const list = [
      { name: 'default', template: 'D' },
      { name: 'tool_use', template: 'T' },
    ];
    const render = (config: unknown) =>
      chatTemplateFromConfig(config, 'c').render([], { addGenerationPrompt: false });
    expect(render({ chat_template: list })).toBe('T');
    expect(render({ chat_template: list.slice(0, 1) })).toBe('D');
  });

  it('names the file and field when the template is missing or invalid', () => {
    expect(() => chatTemplateFromConfig({ eos_token: 'x' }, '/m/tokenizer_config.json')).toThrow(
      /\/m\/tokenizer_config\.json: chat_template: missing/,
    );
    expect(() => chatTemplateFromConfig({ chat_template: '{% for %}' }, 'c.json')).toThrow(
      TokenizerConfigError,
    );
    const raising = chatTemplateFromConfig(
      { chat_template: "{{ raise_exception('roles must alternate') }}" },
      'c.json',
    );
    expect(() => raising.render([], { addGenerationPrompt: false })).toThrow(
      /c\.json: chat_template: rendering failed: .*roles must alternate/,
    );
  });

  it('loads a file from disk, naming it when unreadable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'anneal-tpl-'));
    const path = join(dir, 'tokenizer_config.json');
    writeFileSync(path, JSON.stringify({ chat_template: 'ok' }));
    expect(loadChatTemplate(path).render([], { addGenerationPrompt: false })).toBe('ok');
    expect(() => loadChatTemplate(join(dir, 'nope.json'))).toThrow(
      /cannot read tokenizer config .*nope\.json/,
    );
  });
});

describe("Qwen3's chat template (real tokenizer_config.json)", () => {
  const qwen3 = loadChatTemplate(QWEN3_TOKENIZER_CONFIG);

  it('wraps tool results in <tool_response> inside one user turn', () => {
    const text = qwen3.render(
      [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: '<tool_call>\n{}\n</tool_call>' },
        { role: 'tool', content: 'r1' },
        { role: 'tool', content: 'r2' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toBe(
      '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{}\n</tool_call>' +
        '<|im_end|>\n<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\n' +
        'r2\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('adds an empty think block to the generation prompt when enable_thinking is false', () => {
    const messages = [{ role: 'user' as const, content: 'q' }];
    expect(qwen3.render(messages, { addGenerationPrompt: true })).toMatch(/assistant\n$/);
    expect(
      qwen3.render(messages, { addGenerationPrompt: true, args: { enable_thinking: false } }),
    ).toMatch(/assistant\n<think>\n\n<\/think>\n\n$/);
  });
});
