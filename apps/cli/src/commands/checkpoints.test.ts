import { describe, expect, it } from 'vitest';
import type { CheckpointList } from '@anneal/protocol';
import { writeJson, writeTable } from './checkpoints.ts';

const entry = (step: number, extra: Partial<CheckpointList['checkpoints'][number]> = {}) => ({
  step,
  at: `2026-12-02T00:0${step}:00.000Z`,
  path: `tinker://m/weights/s${step}`,
  status: 'kept' as const,
  latest: false,
  protections: [],
  usedBy: [],
  metrics: { 'reward/all': step / 10, loss: 1 },
  ...extra,
});

const summary = {
  latest: 3,
  kept: 2,
  deleted: { count: 1, firstStep: 1, lastStep: 1 },
};

async function* pages(...lists: Array<Partial<CheckpointList>>) {
  for (const list of lists) {
    yield {
      runId: 'run_x',
      retention: { keepLast: 2 },
      summary,
      checkpoints: [],
      nextCursor: null,
      ...list,
    } as CheckpointList;
  }
}

async function table(...lists: Array<Partial<CheckpointList>>) {
  let text = '';
  await writeTable(pages(...lists), (t) => (text += t));
  return text;
}

describe('writeTable', () => {
  it('writes each page as it comes, columns aligned across pages, then the summary', async () => {
    const text = await table(
      {
        checkpoints: [
          entry(1, { status: 'deleted', deletedAt: '2026-12-02T00:05:00.000Z' }),
          entry(2, {
            protections: [{ owner: 'guard', reason: 'clean', at: '2026-12-02T00:03:00.000Z' }],
            usedBy: ['run_fork'],
          }),
        ],
        nextCursor: 'c1',
      },
      { checkpoints: [entry(3, { latest: true })] },
    );
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^STEP\s+STATUS\s+AT\s+REWARD\/ALL\s+PROTECTED\s+USED BY$/);
    expect(lines[1]).toMatch(/^1\s+deleted\s+\S+\s+0\.1000\s+-\s+-$/);
    expect(lines[2]).toMatch(/^2\s+kept\s+\S+\s+0\.2000\s+guard\s+run_fork$/);
    expect(lines[3]).toMatch(/^3\s+kept \(latest\)/);
    // the status column starts at the same place on every page's rows
    expect(lines[3]?.indexOf('kept')).toBe(lines[2]?.indexOf('kept'));
    expect(lines[5]).toBe('2 kept, 1 deleted (steps 1–1; --status deleted); resume point: 3');
    expect(lines[6]).toBe('retention: {"keepLast":2}');
  });

  it('says when there is nothing, and falls back to the loss', async () => {
    expect(await table({ retention: {} })).toBe(
      'run run_x has no kept checkpoints\n2 kept, 1 deleted (steps 1–1; --status deleted); resume point: 3\nretention: keep all\n',
    );
    const sft = await table({ checkpoints: [entry(1, { metrics: { loss: 0.25 }, latest: true })] });
    expect(sft).toContain('LOSS');
    expect(sft).toContain('0.2500');
  });
});

describe('writeJson', () => {
  it('writes one JSON document holding every page’s entries and the summary', async () => {
    let text = '';
    await writeJson(
      pages({ checkpoints: [entry(1), entry(2)], nextCursor: 'c' }, { checkpoints: [entry(3)] }),
      (t) => (text += t),
    );
    const body = JSON.parse(text) as CheckpointList;
    expect(body.checkpoints.map((c) => c.step)).toEqual([1, 2, 3]);
    expect(body.summary).toEqual(summary);
    expect(body.runId).toBe('run_x');
  });
});
