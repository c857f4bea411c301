import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { type ProcessorDeps, processRunJob } from './process-run.ts';

// A payload that fails the check is refused before any dependency is touched.
const noDeps = {} as ProcessorDeps;
const jobWith = (data: unknown) => ({ id: 'job-1', data }) as Job;

describe('processRunJob: the job payload', () => {
  it.each([
    ['no runId', {}],
    ['a malformed run id', { runId: 'not a run id' }],
    ['an extra field', { runId: 'run_01JD0000000000000000000000', extra: 1 }],
    ['not an object', 'run_01JD0000000000000000000000'],
  ])('is refused for good with %s', async (_, data) => {
    const refused = processRunJob(noDeps, jobWith(data), 'token');
    await expect(refused).rejects.toBeInstanceOf(UnrecoverableError);
    await expect(refused).rejects.toThrow(/^job job-1: payload is not \{runId\}/);
  });

  it('lets a well-formed payload through to the run', async () => {
    // Passing the check reaches `deps.accepting()`, absent here.
    await expect(
      processRunJob(noDeps, jobWith({ runId: 'run_01JD0000000000000000000000' }), 'token'),
    ).rejects.toThrow(TypeError);
  });
});
