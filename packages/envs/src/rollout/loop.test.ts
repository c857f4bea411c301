import { ByteTokenizer } from '@anneal/engines';
import { describe, expect, it } from 'vitest';
import { fakeLogprob, ScriptedEngine } from '../../test/support/scriptedEngine.ts';
import { createToolCallFormat } from '../format/toolCallFormat.ts';
import { LocalCorpusBackend } from '../search/localCorpus.ts';
import { SearchWebTool } from '../search/searchWeb.ts';
import type { RolloutEnv } from './loop.ts';
import { runRolloutGroup, runRollouts } from './loop.ts';
import type { RolloutConfig } from './types.ts';

const tok = new ByteTokenizer();
const format = createToolCallFormat(tok);
const corpus = new LocalCorpusBackend('demo', [
  { id: 'vek', title: 'Vek', text: 'Vek lives in Oru.' },
  { id: 'oru', title: 'Oru', text: 'Oru is in Talm.' },
]);
const compact = { resultsPerCall: 1, includeTitle: false, includeUrl: false, snippetChars: 40 };
const config: RolloutConfig = {
  maxContextTokens: 200,
  maxResponseTokens: 200,
  temperature: 1,
  topP: 1,
};

function env(
  engine: ScriptedEngine,
  overrides: Partial<RolloutConfig> = {},
  maxCallsPerRollout = 5,
): RolloutEnv {
  return {
    engine,
    format,
    tool: new SearchWebTool(corpus, { limits: { maxCallsPerRollout }, render: compact }),
    config: { ...config, ...overrides },
  };
}

/** Model that searches the name in the question, then answers with the town from the result. */
const searcher = new ScriptedEngine((context) => {
  const result = /<\|result\|>(\w+) lives in (\w+)\.<\|\/result\|>$/.exec(context);
  if (result) return `<|answer|>${result[2]}<|eos|>`;
  const name = /Where does (\w+) live\?/.exec(context)?.[1] ?? '?';
  return `<|call|>${name}<|/call|>`;
});

describe('multi-turn rollout loop', () => {
  it('runs call -> tool result -> answer, token-in/token-out with a loss mask', async () => {
    const prompt = format.encodePrompt('Where does Vek live?');
    const [rollout] = await runRolloutGroup(env(searcher), { prompt, n: 1, seed: 7 });
    expect(rollout).toBeDefined();
    const r = rollout!;
    expect(tok.decode(r.tokens)).toBe(
      '<|user|>Where does Vek live?<|assistant|><|call|>Vek<|/call|><|result|>Vek lives in Oru.<|/result|><|answer|>Oru<|eos|>',
    );
    expect(r).toMatchObject({
      answer: 'Oru',
      finish: 'answer',
      truncated: false,
      toolCalls: 1,
      toolErrors: 0,
      promptLength: prompt.length,
    });
    // mask: 0 on prompt and the tool block, 1 on what the model generated
    const maskText = Array.from(r.tokens, (t, i) => (r.lossMask[i] ? tok.decode([t]) : '')).join(
      '',
    );
    expect(maskText).toBe('<|call|>Vek<|/call|><|answer|>Oru<|eos|>');
    expect(r.generatedTokens).toBe(tok.encode('<|call|>Vek<|/call|><|answer|>Oru<|eos|>').length);
    // logprobs are the engine's, at the positions the engine sampled them
    r.tokens.forEach((t, i) =>
      expect(r.logprobs![i]).toBe(r.lossMask[i] ? Math.fround(fakeLogprob(t, i)) : 0),
    );
    // the second request continues from the exact ids of the first, plus the tool output
    const second = searcher.requests.at(-1)!;
    expect(second.prompt).toEqual(
      Array.from(r.tokens.slice(0, r.tokens.length - tok.encode('<|answer|>Oru<|eos|>').length)),
    );
    expect(second.stopTokenIds).toEqual(format.stopTokenIds);
  });

  it('samples without logprobs when the config says so: the same rollout, logprobs null', async () => {
    const prompt = format.encodePrompt('Where does Vek live?');
    const [scored] = await runRolloutGroup(env(searcher), { prompt, n: 1, seed: 7 });
    const sent = searcher.requests.length;
    const [unscored] = await runRolloutGroup(env(searcher, { logprobs: false }), {
      prompt,
      n: 1,
      seed: 7,
    });
    // every request of the second rollout (first turn and after the tool call) asked for none
    const asked = searcher.requests.slice(sent);
    expect(asked.length).toBe(2);
    expect(asked.every((r) => r.logprobs === false)).toBe(true);
    expect(searcher.requests.slice(0, sent).every((r) => r.logprobs === undefined)).toBe(true);
    expect(unscored!.logprobs).toBeNull();
    const { logprobs: _dropped, ...rest } = scored!;
    expect(unscored).toMatchObject({ ...rest, calls: scored!.calls });
  });

  it('fails a rollout whose engine left out the logprobs it was asked for', async () => {
    const engine = new ScriptedEngine(() => '<|answer|>ok<|eos|>');
    const original = engine.sample.bind(engine);
    engine.sample = async (req, signal) =>
      (await original(req, signal)).map((s) => ({ ...s, logprobs: null }));
    await expect(
      runRolloutGroup(env(engine), { prompt: format.encodePrompt('hi'), n: 1 }),
    ).rejects.toThrow(/tokens but no logprobs/);
  });

  it('never re-tokenises model output: ids that decode the same stay as sampled', async () => {
    // The scripted model emits the answer marker's *text* as bytes (not the special token):
    // a re-tokenising loop would turn it into the special id.
    const engine = new ScriptedEngine(() => '<|answer|>ok<|eos|>');
    const spoofed = [...new TextEncoder().encode('<|answer|>')];
    const original = engine.sample.bind(engine);
    engine.sample = async (req, signal) => {
      const out = await original(req, signal);
      return out.map((s) => ({
        ...s,
        tokens: [...spoofed, ...s.tokens],
        logprobs: [...spoofed.map(() => -1), ...s.logprobs!],
      }));
    };
    const [r] = await runRolloutGroup(env(engine), { prompt: format.encodePrompt('hi'), n: 1 });
    expect(Array.from(r!.tokens.slice(r!.promptLength, r!.promptLength + spoofed.length))).toEqual(
      spoofed,
    );
  });

  it('counts failed and refused calls and keeps going', async () => {
    const engine = new ScriptedEngine((context) => {
      const calls = context.split('<|call|>').length - 1;
      if (calls === 0) return `<|call|>${'q'.repeat(300)}<|/call|>`;
      if (calls === 1) return '<|call|>Oru<|/call|>';
      if (calls === 2) return '<|call|>Vek<|/call|>';
      return '<|answer|>Talm<|eos|>';
    });
    const [r] = await runRolloutGroup(
      env(engine, { maxContextTokens: 1000, maxResponseTokens: 1000 }, 2),
      {
        prompt: format.encodePrompt('q'),
        n: 1,
      },
    );
    expect(r!.calls.map((c) => c.status)).toEqual(['query_too_long', 'ok', 'refused']);
    expect([r!.toolCalls, r!.toolErrors, r!.refusedCalls]).toEqual([3, 2, 1]);
    expect(tok.decode(r!.tokens)).toContain('<|result|>error: call limit reached (2)<|/result|>');
    expect(r!.answer).toBe('Talm');
  });

  it('records a call end without a call start as a malformed (failed) call', async () => {
    const engine = new ScriptedEngine((context) =>
      context.includes('<|result|>') ? '<|answer|>x<|eos|>' : 'Vek<|/call|>',
    );
    const [r] = await runRolloutGroup(env(engine), { prompt: format.encodePrompt('q'), n: 1 });
    expect(r!.calls[0]).toMatchObject({ status: 'malformed', failed: true });
    expect(r!.toolErrors).toBe(1);
  });

  it('marks a missing answer marker and truncation by max tokens', async () => {
    const plain = new ScriptedEngine(() => 'Oru<|eos|>');
    const [noAnswer] = await runRolloutGroup(env(plain), {
      prompt: format.encodePrompt('q'),
      n: 1,
    });
    expect(noAnswer).toMatchObject({ answer: null, finish: 'no_answer', truncated: false });

    const rambler = new ScriptedEngine(() => 'blah '.repeat(100));
    const [long] = await runRolloutGroup(env(rambler, { maxResponseTokens: 30 }), {
      prompt: format.encodePrompt('q'),
      n: 1,
    });
    expect(long).toMatchObject({
      finish: 'length',
      truncated: true,
      answer: null,
      generatedTokens: 30,
    });
    expect(rambler.requests[0]?.maxTokens).toBe(30);
  });

  it('fits tool output into the context, then stops at the context limit', async () => {
    const prompt = format.encodePrompt('Where does Vek live?'); // 22 tokens
    const engine = new ScriptedEngine((context) =>
      context.endsWith('<|/result|>') ? 'zzzzzzzzzzzzzzzzzzzz' : '<|call|>Vek<|/call|>',
    );
    const [r] = await runRolloutGroup(
      env(engine, { maxContextTokens: 40, minGenerationTokens: 4 }),
      { prompt, n: 1 },
    );
    expect(r!.tokens).toHaveLength(40);
    expect(tok.decode(r!.tokens)).toContain('<|result|>Vek liv<|/result|>'); // clipped to leave 4 tokens
    expect(r).toMatchObject({ finish: 'length', truncated: true });
  });

  it('returns truncated rollouts when the prompt alone fills the context', async () => {
    const engine = new ScriptedEngine(() => 'x');
    const rollouts = await runRolloutGroup(env(engine, { maxContextTokens: 5 }), {
      prompt: format.encodePrompt('too long'),
      n: 2,
    });
    expect(rollouts.map((r) => [r.finish, r.truncated, r.generatedTokens])).toEqual([
      ['context_overflow', true, 0],
      ['context_overflow', true, 0],
    ]);
    expect(engine.requests).toHaveLength(0);
  });

  it('samples a group with n and seed, then continues each rollout with its own seed', async () => {
    const engine = new ScriptedEngine((context, k) =>
      context.includes('<|result|>')
        ? '<|answer|>Oru<|eos|>'
        : k === 0
          ? '<|answer|>Pel<|eos|>'
          : '<|call|>Vek<|/call|>',
    );
    const group = await runRolloutGroup(env(engine), {
      prompt: format.encodePrompt('Where does Vek live?'),
      n: 3,
      seed: 100,
    });
    expect(group.map((r) => [r.answer, r.toolCalls])).toEqual([
      ['Pel', 0],
      ['Oru', 1],
      ['Oru', 1],
    ]);
    expect(engine.requests[0]).toMatchObject({ n: 3, seed: 100 });
    const continuations = engine.requests.slice(1);
    expect(continuations.every((r) => r.n === 1)).toBe(true);
    expect(new Set(continuations.map((r) => r.seed)).size).toBe(2);
  });

  it('runs several groups concurrently and keeps request order', async () => {
    const engine = new ScriptedEngine((context) => {
      const q = /<\|user\|>(\w+)/.exec(context)?.[1];
      return `<|answer|>${q}<|eos|>`;
    });
    const prompts = ['a', 'b', 'c', 'd'].map((q) => ({
      prompt: format.encodePrompt(q),
      n: 2,
      seed: 1,
    }));
    const out = await runRollouts(env(engine), prompts);
    expect(out.map((g) => g.map((r) => r.answer))).toEqual([
      ['a', 'a'],
      ['b', 'b'],
      ['c', 'c'],
      ['d', 'd'],
    ]);
    expect(engine.maxInFlight).toBe(4);
  });

  it('aborts sibling requests when one rollout fails', async () => {
    let calls = 0;
    const engine = new ScriptedEngine(() => '<|call|>Vek<|/call|>');
    const original = engine.sample.bind(engine);
    const signals: AbortSignal[] = [];
    engine.sample = async (req, signal) => {
      signals.push(signal!);
      if (++calls === 2) throw new Error('engine exploded');
      return original(req, signal);
    };
    await expect(
      runRollouts(env(engine), [
        { prompt: [1], n: 1 },
        { prompt: [2], n: 1 },
      ]),
    ).rejects.toThrow('engine exploded');
    // the sibling group's request was aborted because of the failure (the reason is the error)
    expect((signals[0]?.reason as Error).message).toBe('engine exploded');
  });
});
