import { LOGPROBS_MODES } from '@anneal/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { EngineError } from './http/errors.ts';
import {
  classifyLogprobsMode,
  logprobsModeMismatch,
  probeLogprobsMode,
  type TopValues,
} from './logprobs-mode.ts';
import { FakeLogprobsServer } from '../test/fake-logprobs-server.ts';

let server: FakeLogprobsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function probe(mode: (typeof LOGPROBS_MODES)[number], options = {}) {
  server = new FakeLogprobsServer({ mode });
  const baseUrl = await server.listen();
  return probeLogprobsMode({ endpoint: 'gen', baseUrl, model: 'm', prompt: [5, 9, 2], ...options });
}

describe('probeLogprobsMode against a fake vLLM server', () => {
  it.each(LOGPROBS_MODES)('measures --logprobs-mode %s', async (mode) => {
    const verdict = await probe(mode);
    expect(verdict.mode).toBe(mode);
    expect(verdict.tokens).toBe(10);
  });

  it('asks for one token at T = 1 and T = τ, untruncated, with token ids as keys', async () => {
    await probe('processed_logprobs', { temperature: 0.7, topLogprobs: 5 });
    const sent = server!.requests.map((r) => r['temperature']).sort();
    expect(sent).toEqual([0.7, 1]);
    expect(server!.requests[0]).toMatchObject({
      model: 'm',
      prompt: [5, 9, 2],
      max_tokens: 1,
      top_p: 1,
      top_k: -1,
      logprobs: 5,
      return_tokens_as_token_ids: true,
    });
  });

  it('surfaces a refused request as an EngineError with the status', async () => {
    const failure = probe('raw_logprobs', { topLogprobs: 50 });
    await expect(failure).rejects.toBeInstanceOf(EngineError);
    await expect(failure).rejects.toThrow(/HTTP 400.*max allowed/);
  });
});

const top = (entries: Array<[number, number]>): TopValues =>
  new Map(entries.map(([id, v]) => [`token_id:${id}`, v]));

describe('classifyLogprobsMode (pure)', () => {
  const one = top([
    [1, -0.3],
    [2, -2.0],
    [3, -3.1],
    [4, -4.5],
  ]);

  it('slope 1 is raw, slope 1/τ processed; normalisation shifts do not matter', () => {
    const shifted = top([...one].map(([k, v]) => [Number(k.slice(9)), v - 0.01]));
    expect(classifyLogprobsMode(one, shifted, 0.5).mode).toBe('raw_logprobs');
    const sharper = top([...one].map(([k, v]) => [Number(k.slice(9)), 2 * v + 0.1]));
    const verdict = classifyLogprobsMode(one, sharper, 0.5);
    expect(verdict.mode).toBe('processed_logprobs');
    expect(verdict.slope).toBeCloseTo(2, 6);
  });

  it('ignores tokens clamped to −9999 (masked by top-k/top-p) and needs three shared tokens', () => {
    const masked = top([
      [1, -0.1],
      [2, -9999],
      [3, -9999],
    ]);
    expect(classifyLogprobsMode(one, masked, 0.5)).toMatchObject({ mode: 'unknown', tokens: 1 });
  });

  it('answers unknown when the distribution is too flat or the slope is neither', () => {
    const flat = top([
      [1, -1.0],
      [2, -1.1],
      [3, -1.2],
    ]);
    expect(classifyLogprobsMode(flat, flat, 0.5).mode).toBe('unknown');
    const between = top([...one].map(([k, v]) => [Number(k.slice(9)), 1.4 * v]));
    expect(classifyLogprobsMode(one, between, 0.5).mode).toBe('unknown');
  });

  it('tells logits from logprobs', () => {
    const logits = top([
      [1, 12],
      [2, 10.2],
      [3, 9.1],
    ]);
    expect(classifyLogprobsMode(logits, logits, 0.5).mode).toBe('raw_logits');
  });
});

describe('logprobsModeMismatch', () => {
  it('explains a declared mode the server does not run', async () => {
    const verdict = await probe('raw_logprobs');
    expect(logprobsModeMismatch('gen', 'raw_logprobs', verdict)).toBeUndefined();
    expect(logprobsModeMismatch('gen', 'processed_logprobs', verdict)).toMatch(
      /'gen' declares logprobsMode processed_logprobs but its server reports raw_logprobs.*--logprobs-mode processed_logprobs/,
    );
  });
});
