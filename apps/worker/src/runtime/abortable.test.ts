// raceAbort: many engine calls of one run race its signal behind one listener.
import { afterEach, describe, expect, it } from 'vitest';
import { raceAbort } from './abortable.ts';

const warnings: Error[] = [];
const onWarning = (warning: Error) => warnings.push(warning);
process.on('warning', onWarning);
afterEach(() => {
  warnings.length = 0;
});

describe('raceAbort', () => {
  it('100 calls in flight on one signal: no MaxListenersExceededWarning; an abort rejects each', async () => {
    const controller = new AbortController();
    const pending = Array.from({ length: 100 }, () =>
      raceAbort(controller.signal, new Promise<never>(() => undefined)),
    );
    controller.abort(new Error('cancel requested'));
    const settled = await Promise.allSettled(pending);
    expect(settled.every((s) => s.status === 'rejected')).toBe(true);
    expect((settled[0] as PromiseRejectedResult).reason).toMatchObject({
      name: 'AbortError',
      message: 'run stopping: cancel requested',
    });
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on a tick
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('a call that settles first keeps its own outcome and is forgotten', async () => {
    const controller = new AbortController();
    const done = await Promise.all(
      Array.from({ length: 20 }, (_, i) => raceAbort(controller.signal, Promise.resolve(i))),
    );
    expect(done).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await expect(
      raceAbort(controller.signal, Promise.reject(new Error('engine down'))),
    ).rejects.toThrow('engine down');
    controller.abort(new Error('late'));
    await expect(raceAbort(controller.signal, Promise.resolve(1))).rejects.toMatchObject({
      name: 'AbortError',
    });
  });
});
