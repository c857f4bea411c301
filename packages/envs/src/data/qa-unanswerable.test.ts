// QA rows may mark a question `unanswerable` and give its `language` (docs/recipe.md §8.1: the
// eval scores abstention and language mismatch).
import { describe, expect, it } from 'vitest';
import { formatRowError, validateJsonl } from './jsonl.ts';

describe('QA rows: unanswerable', () => {
  it('keeps `unanswerable: true`, drops false, refuses a non-boolean naming the field', () => {
    const text = [
      { question: 'Who?', answer: 'nobody', unanswerable: true },
      { question: 'Where?', answer: 'Oslo', unanswerable: false },
      { question: 'When?', answer: '1900', unanswerable: 'yes' },
    ]
      .map((r) => JSON.stringify(r))
      .join('\n');
    const result = validateJsonl('qa', text);
    expect(result.rows).toEqual([
      { question: 'Who?', answer: 'nobody', unanswerable: true },
      { question: 'Where?', answer: 'Oslo' },
    ]);
    expect(result.errors.map(formatRowError)).toEqual(['line 3: unanswerable: must be a boolean']);
  });

  it('keeps a known `language`, refuses an unknown one', () => {
    const text = [
      { question: 'Wo?', answer: 'Oslo', language: 'de' },
      { question: 'Where?', answer: 'Oslo', language: 'xx' },
    ]
      .map((r) => JSON.stringify(r))
      .join('\n');
    const result = validateJsonl('qa', text);
    expect(result.rows).toEqual([{ question: 'Wo?', answer: 'Oslo', language: 'de' }]);
    expect(result.errors.map(formatRowError)[0]).toMatch(/^line 2: language: must be one of en, /);
  });
});
