import { describe, expect, it } from 'vitest';
import { noopLogger } from '@anneal/telemetry';
import { ActiveRun, ActiveRuns } from './active-runs.ts';
import { handleControlMessage } from './control.ts';

const RUN = 'run_01J00000000000000000000000';

function setup() {
  const runs = new ActiveRuns();
  const run = new ActiveRun(RUN, 'sft', 0);
  runs.add(run);
  const drains: boolean[] = [];
  const handlers = {
    runs,
    workerId: 'w-1',
    drain: (r: boolean) => drains.push(r),
    logger: noopLogger,
  };
  return { runs, run, drains, handlers };
}

describe('control messages', () => {
  it('cancel aborts the stop signal of the run this worker holds, and only that one', () => {
    const { run, handlers } = setup();
    handleControlMessage(
      { type: 'cancel', runId: 'run_01J00000000000000000000001', reason: 'x' },
      handlers,
    );
    expect(run.stopSignal.aborted).toBe(false);
    handleControlMessage({ type: 'cancel', runId: RUN, reason: 'user asked' }, handlers);
    expect(run.stopSignal.aborted).toBe(true);
    expect(run.stopRequest).toEqual({ kind: 'cancel', reason: 'user asked' });
  });

  it('drain applies to the named worker only', () => {
    const { drains, handlers } = setup();
    handleControlMessage({ type: 'drain', workerId: 'w-2', checkpointAndRelease: true }, handlers);
    handleControlMessage({ type: 'drain', workerId: 'w-1', checkpointAndRelease: false }, handlers);
    expect(drains).toEqual([false]);
  });

  it('stop precedence: lost > cancel > release; the first abort reason stays on the signal', () => {
    const { run } = setup();
    expect(run.stop({ kind: 'release', reason: 'draining' })).toBe(true);
    expect(run.stop({ kind: 'cancel', reason: 'user' })).toBe(true);
    expect(run.stop({ kind: 'release', reason: 'shutdown' })).toBe(false);
    expect(run.stopRequest?.kind).toBe('cancel');
    expect(run.stop({ kind: 'lost', reason: 'lock lost' })).toBe(true);
    expect(run.stop({ kind: 'cancel', reason: 'again' })).toBe(false);
    expect(run.stopRequest).toEqual({ kind: 'lost', reason: 'lock lost' });
    expect((run.stopSignal.reason as Error).message).toBe('draining');
  });

  it('a run can be held once', () => {
    const { runs } = setup();
    expect(() => runs.add(new ActiveRun(RUN, 'sft', 0))).toThrow(/already held/);
  });
});
