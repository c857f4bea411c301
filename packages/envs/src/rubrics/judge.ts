// LLM judge for rubrics that have no programmatic check: a named OpenAI-compatible endpoint
// asked for one PASS/FAIL line per rubric (temperature 0).
import { JUDGE_DEFAULTS } from '@anneal/protocol';
import { ChatClient, ChatError } from '../chat/openaiChat.ts';
import type { ChatEndpointConfig, ChatMessage } from '../chat/openaiChat.ts';
import type { Rubric } from './types.ts';

export interface JudgeEndpointConfig extends ChatEndpointConfig {
  /** Completion token limit (default JUDGE_DEFAULTS.maxTokens); `timeoutMs` defaults to
   * JUDGE_DEFAULTS.timeoutSeconds. */
  maxTokens?: number;
}

const SYSTEM_PROMPT = [
  'You grade an assistant response against rubrics. Each rubric is a requirement that the',
  'response either meets or does not. Judge each rubric independently and strictly.',
  'Reply with exactly one line per rubric in the form "<number>: PASS" or "<number>: FAIL",',
  'in rubric order, and nothing else.',
].join(' ');

export function judgeMessages(
  prompt: string,
  response: string,
  rubrics: readonly Rubric[],
): ChatMessage[] {
  const list = rubrics.map((r, i) => `${i + 1}. ${r.text}`).join('\n');
  return [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: `Prompt:\n${prompt}\n\nResponse:\n${response}\n\nRubrics:\n${list}` },
  ];
}

/** Parse "<n>: PASS|FAIL" lines; every rubric needs a verdict (the first one given counts). */
export function parseVerdicts(content: string, count: number): boolean[] {
  const verdicts = new Array<boolean | undefined>(count).fill(undefined);
  for (const match of content.matchAll(/^\W*(\d+)\**\s*[:.)-]\s*\**\s*(PASS|FAIL)\b/gim)) {
    const index = Number(match[1]) - 1;
    if (index >= 0 && index < count && verdicts[index] === undefined) {
      verdicts[index] = (match[2] as string).toUpperCase() === 'PASS';
    }
  }
  const missing = verdicts.flatMap((v, i) => (v === undefined ? [i + 1] : []));
  if (missing.length > 0) {
    throw new ChatError(
      'unparseable',
      `judge gave no PASS/FAIL for rubric ${missing.join(', ')}: ${content.slice(0, 200)}`,
    );
  }
  return verdicts as boolean[];
}

/** Grades rubrics: one verdict per rubric, in order (LlmJudge, or a wrapper that measures it). */
export interface RubricJudge {
  readonly name: string;
  judge(
    prompt: string,
    response: string,
    rubrics: readonly Rubric[],
    signal?: AbortSignal,
  ): Promise<boolean[]>;
}

export class LlmJudge implements RubricJudge {
  private readonly client: ChatClient;

  constructor(
    readonly name: string,
    private readonly config: JudgeEndpointConfig,
  ) {
    this.client = new ChatClient(name, {
      ...config,
      timeoutMs: config.timeoutMs ?? JUDGE_DEFAULTS.timeoutSeconds * 1000,
    });
  }

  /** One verdict per rubric, in order. Throws ChatError (HTTP, timeout, unparseable reply). */
  async judge(
    prompt: string,
    response: string,
    rubrics: readonly Rubric[],
    signal?: AbortSignal,
  ): Promise<boolean[]> {
    if (rubrics.length === 0) return [];
    const [content] = await this.client.complete(
      judgeMessages(prompt, response, rubrics),
      { temperature: 0, maxTokens: this.config.maxTokens ?? JUDGE_DEFAULTS.maxTokens },
      signal,
    );
    return parseVerdicts(content as string, rubrics.length);
  }
}
