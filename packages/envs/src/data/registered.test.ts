import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRegisteredDatasets, loadRegisteredDataset } from './registered.ts';

let dir: string;
const file = (name: string) => path.join(dir, name);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-datasets-'));
  await writeFile(
    file('qa.jsonl'),
    '{"question":"Capital of France?","answer":"Paris","aliases":["paris"]}\n\n{"question":"2+2?","answer":"4"}\n',
  );
  await writeFile(
    file('bad.jsonl'),
    '{"question":"q","answer":"a"}\n{"question":"q2"}\nnot json\n',
  );
  await writeFile(
    file('chat.jsonl'),
    '{"prompt":"Be nice","rubrics":[{"text":"is polite"}]}\n' +
      '{"prompt":"Shout","rubrics":[{"text":"caps","check":{"type":"regex","pattern":"[a-z]","mustMatch":false}}]}\n',
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('registered datasets', () => {
  it('loads valid rows', async () => {
    const qa = await loadRegisteredDataset('my-qa', { kind: 'qa', path: file('qa.jsonl') });
    expect(qa.kind).toBe('qa');
    expect(qa.rows).toEqual([
      { question: 'Capital of France?', answer: 'Paris', aliases: ['paris'] },
      { question: '2+2?', answer: '4' },
    ]);
  });

  it('names the dataset, file and line of every bad row, and unreadable files', async () => {
    const check = await checkRegisteredDatasets({
      broken: { kind: 'qa', path: file('bad.jsonl') },
      missing: { kind: 'sft', path: file('nope.jsonl') },
      chat: { kind: 'rubric', path: file('chat.jsonl') },
    });
    const where = `/datasets/broken (${file('bad.jsonl')})`;
    expect(check.problems[0]).toBe(
      `${where}: line 2: answer: is required (non-empty string)\n` +
        `${where}: line 3: invalid JSON (${errorOf('not json')})`,
    );
    expect(check.problems[1]).toMatch(
      /^\/datasets\/missing \(.*nope\.jsonl\): cannot read: ENOENT/,
    );
    expect(check.problems).toHaveLength(2);
    expect(check.needsJudge).toEqual(['chat']);
  });
});

function errorOf(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  return '';
}
