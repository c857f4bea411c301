import { describe, expect, it } from 'vitest';
import { JOB_CATALOGUE, RunJobPayload, bullPriority, poolQueueName } from './jobs.ts';
import { Value } from '@sinclair/typebox/value';

describe('job catalogue', () => {
  it('maps user priority (higher first) to BullMQ priority (lower first), within 1..101', () => {
    expect(bullPriority(100)).toBe(1);
    expect(bullPriority(0)).toBe(101);
    expect(bullPriority(80)).toBeLessThan(bullPriority(20));
  });

  it('names one queue per pool without ":" and validates payloads', () => {
    expect(poolQueueName('gpu-a100')).toBe('pool-gpu-a100');
    expect(JOB_CATALOGUE.run.queueName('x')).not.toContain(':');
    expect(Value.Check(RunJobPayload, { runId: 'run_01HZZZZZZZZZZZZZZZZZZZZZZZ' })).toBe(true);
    expect(Value.Check(RunJobPayload, { runId: 'x', extra: 1 })).toBe(false);
  });
});
