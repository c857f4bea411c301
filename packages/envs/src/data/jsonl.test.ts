import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DatasetError, formatRowError, loadJsonl, validateJsonl } from './jsonl.ts';

const lines = (...rows: unknown[]) =>
  rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n');
const messages = (kind: Parameters<typeof validateJsonl>[0], text: string) =>
  validateJsonl(kind, text).errors.map(formatRowError);

describe('JSONL validation', () => {
  it('accepts valid QA rows and skips blank lines', () => {
    const result = validateJsonl(
      'qa',
      lines(
        { question: 'Q?', answer: 'A', aliases: ['a'] },
        '',
        { question: 'Q2?', answer: '5' },
        '',
      ),
    );
    expect(result.errors).toEqual([]);
    expect(result.rows).toEqual([
      { question: 'Q?', answer: 'A', aliases: ['a'] },
      { question: 'Q2?', answer: '5' },
    ]);
    expect(result.lines).toEqual([1, 3]);
  });

  it('collects every error with line numbers and field paths', () => {
    const text = lines(
      { question: 'ok?', answer: 'ok' },
      { question: 'Q?', answer: '' },
      '{not json',
      [1, 2],
      { qestion: 'typo?', answer: 'x', aliases: ['', 3] },
    );
    expect(messages('qa', text)).toEqual([
      'line 2: answer: must be a non-empty string',
      expect.stringMatching(/^line 3: invalid JSON/),
      'line 4: must be a JSON object',
      'line 5: qestion: unknown field',
      'line 5: question: is required (non-empty string)',
      'line 5: aliases[0]: must be a non-empty string',
      'line 5: aliases[1]: must be a non-empty string',
    ]);
  });

  it('validates rubric prompts and their programmatic checks', () => {
    const text = lines(
      {
        prompt: 'P',
        rubrics: ['is polite', { text: 'in English', check: { type: 'language', language: 'en' } }],
        reference: 'r',
      },
      { prompt: 'P', rubrics: [] },
      {
        prompt: 'P',
        rubrics: [{ text: 'x', check: { type: 'regex', pattern: '(', mustMatch: false } }],
      },
      {
        prompt: 'P',
        rubrics: [
          { text: 'x', check: { type: 'spell' } },
          { text: 'y', check: { type: 'language', language: 'xx' } },
        ],
      },
      {
        prompt: 'P',
        rubrics: [{ text: 'x', check: { type: 'contains_all', terms: [], extra: 1 } }],
      },
    );
    const result = validateJsonl('rubric', text);
    expect(result.rows[0]?.rubrics).toEqual([
      { text: 'is polite' },
      { text: 'in English', check: { type: 'language', language: 'en' } },
    ]);
    expect(result.errors.map(formatRowError)).toEqual([
      'line 2: rubrics: must have at least 1 item(s)',
      expect.stringMatching(/^line 3: rubrics\[0\]\.check\.pattern: invalid regex/),
      'line 4: rubrics[0].check.type: must be one of language, contains_all, contains_any, contains_none, regex, max_words',
      'line 4: rubrics[1].check.language: must be one of en, nl, de, fr, es, id, ko, ja, zh, ru, ar, el',
      'line 5: rubrics[0].check.extra: unknown field',
      'line 5: rubrics[0].check.terms: must have at least 1 item(s)',
    ]);
  });

  it('validates SFT rows (completion or ordered turns)', () => {
    const text = lines(
      { prompt: 'P', completion: '<|answer|>x<|eos|>' },
      { prompt: 'P', turns: [{ call: 'q' }, { result: 'r' }, { answer: 'a' }] },
      { prompt: 'P' },
      { prompt: 'P', completion: 'x', turns: [] },
      { prompt: 'P', turns: [{ result: 'r' }, { answer: 'a' }, { call: 'q' }] },
      { prompt: 'P', turns: [{ call: 'q', answer: 'a' }] },
    );
    expect(validateJsonl('sft', text).rows).toHaveLength(2);
    expect(messages('sft', text)).toEqual([
      'line 3: completion: is required (or turns)',
      'line 4: turns: give either completion or turns, not both',
      'line 5: turns[0].result: must follow a call',
      'line 5: turns[1].answer: must be the last turn',
      'line 5: turns[2]: the last turn must be an answer',
      'line 6: turns[0]: must have exactly one of call, result, answer',
    ]);
  });

  it('refuses SFT completions whose tool-output blocks do not balance (they are masked)', () => {
    const text = lines(
      { prompt: 'P', completion: '<|call|>q<|/call|><|result|>r<|/result|><|answer|>a' },
      { prompt: 'P', completion: '<|call|>q<|/call|><|result|>r<|answer|>a' },
      { prompt: 'P', completion: 'x<|/result|>' },
    );
    expect(validateJsonl('sft', text).rows).toHaveLength(1);
    expect(messages('sft', text)).toEqual([
      'line 2: completion: <|result|> at character 18 has no closing <|/result|>',
      'line 3: completion: <|/result|> at character 1 closes no tool output',
    ]);
  });

  it('validates preference pairs', () => {
    expect(
      messages(
        'preference',
        lines({ prompt: 'P', chosen: 'a', rejected: 'a' }, { prompt: 'P', chosen: 'a' }),
      ),
    ).toEqual([
      'line 1: rejected: must differ from chosen',
      'line 2: rejected: is required (non-empty string)',
    ]);
  });

  it('reports an empty file', () => {
    expect(messages('qa', '\n\n')).toEqual(['line 1: the file has no rows']);
  });

  it('loadJsonl throws a DatasetError listing the bad rows', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'envs-jsonl-'));
    try {
      const file = join(dir, 'qa.jsonl');
      await writeFile(file, lines({ question: 'Q', answer: 'A' }, { question: 'Q' }));
      const err = await loadJsonl('qa', file).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DatasetError);
      expect((err as DatasetError).message).toBe(
        `${file}: 1 invalid row(s)\n  line 2: answer: is required (non-empty string)`,
      );
      await writeFile(file, lines({ question: 'Q', answer: 'A' }));
      expect(await loadJsonl('qa', file)).toEqual([{ question: 'Q', answer: 'A' }]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
