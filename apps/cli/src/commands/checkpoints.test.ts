import { describe, expect, it } from 'vitest';
import type { CheckpointList } from '@anneal/protocol';
import { checkpointsTable } from './checkpoints.ts';

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

describe('checkpointsTable', () => {
  it('shows status, the resume point, the reward, protections, forks and the retention', () => {
    const text = checkpointsTable({
      runId: 'run_x',
      retention: { keepLast: 2 },
      checkpoints: [
        entry(1, { status: 'deleted', deletedAt: '2026-12-02T00:05:00.000Z' }),
        entry(2, {
          protections: [{ owner: 'guard', reason: 'clean', at: '2026-12-02T00:03:00.000Z' }],
          usedBy: ['run_fork'],
        }),
        entry(3, { latest: true }),
      ],
    });
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^STEP\s+STATUS\s+AT\s+REWARD\/ALL\s+PROTECTED\s+USED BY$/);
    expect(lines[1]).toMatch(/^1\s+deleted\s+\S+\s+0\.1000\s+-\s+-$/);
    expect(lines[2]).toMatch(/^2\s+kept\s+\S+\s+0\.2000\s+guard\s+run_fork$/);
    expect(lines[3]).toMatch(/^3\s+kept \(latest\)/);
    expect(lines[4]).toBe('retention: {"keepLast":2}');
  });

  it('says when there is nothing, and falls back to the loss', () => {
    expect(checkpointsTable({ runId: 'run_x', retention: {}, checkpoints: [] })).toBe(
      'run run_x has no checkpoints\n',
    );
    const sft = checkpointsTable({
      runId: 'run_x',
      retention: {},
      checkpoints: [entry(1, { metrics: { loss: 0.25 }, latest: true })],
    });
    expect(sft).toContain('LOSS');
    expect(sft).toContain('0.2500');
    expect(sft).toContain('retention: keep all');
  });
});
