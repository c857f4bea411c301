import { JUDGE_DEFAULTS } from '@anneal/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChatFixture } from '../../test/support/chatFixture.ts';
import type { ChatRequestBody } from '../../test/support/chatFixture.ts';
import { startFixture } from '../../test/support/httpFixture.ts';
import type { Fixture } from '../../test/support/httpFixture.ts';
import { ChatError } from '../chat/openaiChat.ts';
import { evaluateRubrics } from './evaluate.ts';
import { LlmJudge, parseVerdicts } from './judge.ts';

let fixture: Fixture;
let reply: (body: ChatRequestBody) => string[] | number = () => ['1: PASS'];
beforeAll(async () => {
  fixture = await startChatFixture((body) => reply(body));
});
afterAll(() => fixture.close());

describe('parseVerdicts', () => {
  it('reads one PASS/FAIL per rubric in common layouts', () => {
    expect(parseVerdicts('1: PASS\n2: FAIL\n3. pass', 3)).toEqual([true, false, true]);
    expect(parseVerdicts('**1**: PASS\n- 2) FAIL', 2)).toEqual([true, false]);
  });
  it('names the rubrics without a verdict', () => {
    expect(() => parseVerdicts('1: PASS', 3)).toThrow(/no PASS\/FAIL for rubric 2, 3/);
  });
});

describe('LlmJudge against an OpenAI-compatible fixture', () => {
  it('posts a chat completion asking PASS/FAIL per rubric and maps the verdicts', async () => {
    reply = () => ['1: FAIL\n2: PASS'];
    const judge = new LlmJudge('judge', {
      baseUrl: fixture.baseUrl,
      model: 'grader',
      apiKey: 'k1',
    });
    const verdicts = await evaluateRubrics({
      prompt: 'Describe lodging.',
      response: 'Rooms and meals.',
      judge,
      rubrics: [
        { text: 'mentions price' },
        { text: 'no citations', check: { type: 'regex', pattern: '\\[', mustMatch: false } },
        { text: 'mentions meals' },
      ],
    });
    expect(verdicts.map((v) => [v.pass, v.by])).toEqual([
      [false, 'judge'],
      [true, 'program'],
      [true, 'judge'],
    ]);
    const sent = fixture.requests.at(-1)!;
    expect(sent.url).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe('Bearer k1');
    const body = JSON.parse(sent.body) as ChatRequestBody;
    expect(body).toMatchObject({ model: 'grader', temperature: 0 });
    expect(body.max_tokens).toBe(JUDGE_DEFAULTS.maxTokens); // the operator-config default
    expect(body.messages[1]?.content).toContain('Rubrics:\n1. mentions price\n2. mentions meals');
    expect(body.messages[0]?.content).toContain('"<number>: PASS"');
  });

  it('turns HTTP errors into ChatError with the server message', async () => {
    reply = () => 400;
    const judge = new LlmJudge('judge', { baseUrl: fixture.baseUrl, model: 'grader' });
    const err = await judge.judge('p', 'r', [{ text: 'x' }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChatError);
    expect(err).toMatchObject({
      code: 'http_status',
      status: 400,
      message: "chat 'judge': HTTP 400: fixture error 400",
    });
  });

  it('rejects an unparseable reply', async () => {
    reply = () => ['Looks fine to me.'];
    const judge = new LlmJudge('judge', { baseUrl: fixture.baseUrl, model: 'grader' });
    await expect(judge.judge('p', 'r', [{ text: 'x' }])).rejects.toMatchObject({
      code: 'unparseable',
    });
  });

  it('times out', async () => {
    const hang = await startFixture(() => undefined); // never answers
    const judge = new LlmJudge('slow', { baseUrl: hang.baseUrl, model: 'm', timeoutMs: 80 });
    await expect(judge.judge('p', 'r', [{ text: 'x' }])).rejects.toMatchObject({ code: 'timeout' });
    await hang.close();
  });
});
