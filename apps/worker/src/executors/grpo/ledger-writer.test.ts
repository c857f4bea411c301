// The rollout ledger's writer thread (ledger-writer.ts): a step written there reads back whole,
// the records' JSON is not built on the calling thread, and a failed write rejects with the
// file system's code (what the run's failure names).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { rolloutId, type RolloutRecord } from '@anneal/protocol';
import { commitLedgerStep, readLedgerStep, type LedgerStepInput } from '@anneal/store/files';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LedgerWriter } from './ledger-writer.ts';

const record = (group: number, index: number): RolloutRecord => ({
  id: rolloutId('policy', 1, group, index),
  role: 'policy',
  index,
  pairedWith: rolloutId('reference', 1, group, index),
  policyVersion: 0,
  step: 1,
  group,
  promptId: 'p-0123456789abcdef',
  source: 'search-qa',
  exampleId: `q${group}`,
  component: 'qa',
  prompt: { text: 'When?', tokens: 3 },
  turns: [{ assistant: `answer ${group}.${index} — 北京`, calls: [] }],
  answer: '1932',
  finish: 'answer',
  truncated: false,
  lengths: { generated: 5, response: 5, total: 8 },
  toolCalls: 0,
  toolErrors: 0,
  rewards: {
    base: 1,
    preference: 0.5,
    toolPenalty: 0,
    lengthPenalty: 0,
    efficiencyPenalty: 0,
    reward: 1,
  },
  advantage: 0.5,
  ratio: null,
  checks: null,
});

const step = (groups: RolloutRecord[][]): LedgerStepInput => ({
  step: 1,
  attempt: 1,
  policyVersion: 0,
  groupSize: 2,
  tokens: false,
  sample: [0],
  groups,
});

describe('rollout ledger writer thread', () => {
  let dir: string;
  const writer = new LedgerWriter();
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-ledger-writer-'));
  });
  afterAll(async () => {
    await writer.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a step that reads back whole, serialising nothing on this thread', async () => {
    const groups = [0, 1].map((g) => [0, 1].map((i) => record(g, i)));
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      await writer.write(dir, step(groups));
      expect(stringify).not.toHaveBeenCalled();
    } finally {
      stringify.mockRestore();
    }
    await commitLedgerStep(dir, 1, { attempt: 1, generation: 0 });
    expect(await readLedgerStep(dir, 1)).toEqual(groups.flat());
  });

  it('rejects with the file system error and its code', async () => {
    const file = path.join(dir, 'not-a-directory');
    await writeFile(file, '');
    const error = (await writer.write(file, step([[record(0, 0)]])).catch((e: unknown) => e)) as
      (Error & { code?: string }) | undefined;
    expect(error).toBeInstanceOf(Error);
    expect(error?.code).toBe('ENOTDIR');
    expect(error?.message).toMatch(/^ENOTDIR: .*not-a-directory/);
  });
});
