// Registered dataset files: refused when they are not regular files (a FIFO used to hang the
// control plane's start), too large, or have a line over the cap or not valid UTF-8 (it used to
// become U+FFFD silently); each bad line is named, the rest still validated.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeDatasetLines } from './read-file.ts';
import { RegisteredDatasetError, loadRegisteredDataset } from './registered.ts';

let dir: string;
const file = (name: string) => path.join(dir, name);
const row = (question: string) => JSON.stringify({ question, answer: 'a' });

/** Settles within `ms` or rejects: a read that blocks forever fails the test instead of hanging it. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function loadError(name: string, limits?: { maxFileBytes: number; maxLineBytes: number }) {
  const error = await within(
    loadRegisteredDataset('d', { kind: 'qa', path: file(name) }, limits),
    5_000,
  ).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RegisteredDatasetError);
  return (error as Error).message;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-dataset-read-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('reading a registered dataset file', () => {
  it('refuses a line over the default 1 MiB cap, naming it, and validates the others', async () => {
    await writeFile(
      file('long.jsonl'),
      `${row('q1')}\n${row('x'.repeat(2_000_000))}\n{"question":"q3"}\n`,
    );
    const message = await loadError('long.jsonl');
    expect(message).toContain(
      `/datasets/d (${file('long.jsonl')}): line 2: line is ${row('x'.repeat(2_000_000)).length} bytes, over the limit of 1048576`,
    );
    expect(message).toContain('line 3: answer: is required (non-empty string)');
  });

  it('refuses invalid UTF-8 with the line number', async () => {
    const bad = Buffer.concat([
      Buffer.from(`${row('q1')}\n{"question":"caf`),
      Buffer.from([0xc3, 0x28]),
      Buffer.from(`","answer":"a"}\r\n${row('q3')}\n`),
    ]);
    await writeFile(file('utf8.jsonl'), bad);
    const message = await loadError('utf8.jsonl');
    expect(message).toBe(`/datasets/d (${file('utf8.jsonl')}): line 2: not valid UTF-8`);
  });

  it('refuses a FIFO at once instead of waiting for a writer', async () => {
    execFileSync('mkfifo', [file('fifo.jsonl')]);
    expect(await loadError('fifo.jsonl')).toBe(
      `/datasets/d (${file('fifo.jsonl')}): is a FIFO, not a regular file`,
    );
  });

  it('refuses a directory and a file over maxFileBytes', async () => {
    expect(await loadError('.')).toContain('is a directory, not a regular file');
    await writeFile(file('big.jsonl'), `${row('q1')}\n${row('q2')}\n`);
    expect(await loadError('big.jsonl', { maxFileBytes: 40, maxLineBytes: 1000 })).toContain(
      'is 62 bytes, over the limit of 40',
    );
  });

  it('keeps CRLF, multi-byte text and line numbers', async () => {
    const text = `${row('été')}\r\n\r\n${row('日本')}`;
    expect(decodeDatasetLines(Buffer.from(text), 100)).toEqual({
      text: `${row('été')}\n\n${row('日本')}`,
      errors: [],
    });
    await writeFile(file('ok.jsonl'), `${text}\n`);
    const ok = await loadRegisteredDataset('d', { kind: 'qa', path: file('ok.jsonl') });
    expect(ok.rows).toEqual([
      { question: 'été', answer: 'a' },
      { question: '日本', answer: 'a' },
    ]);
  });
});
