// Many concurrent requests sharing one caller signal: one abort listener on it at a time, none
// left once they finish, no MaxListenersExceededWarning, and an abort still reaches each one.
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { linkSignals } from '../http/timing.ts';
import { VllmInferenceEngine } from './client.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';

const CONCURRENT = 100;

const warnings: Error[] = [];
const onWarning = (warning: Error): void => void warnings.push(warning);
const open: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  process.off('warning', onWarning);
  warnings.length = 0;
  await Promise.all(open.splice(0).map((x) => x.close()));
});

/** Warnings are emitted on a later tick. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function engineOnFake(): Promise<{ fake: FakeVllmServer; engine: VllmInferenceEngine }> {
  const fake = await FakeVllmServer.start();
  const engine = new VllmInferenceEngine(
    {
      name: 'signals',
      replicas: [fake.url],
      model: 'base-model',
      healthCheckIntervalMs: 0,
      maxInFlight: CONCURRENT,
    },
    { timers: fakeTimers().timers },
  );
  open.push(engine, fake);
  return { fake, engine };
}

const sampleRequest = { prompt: [1, 2, 3], n: 1, maxTokens: 4, temperature: 1, topP: 1 };

describe('one signal shared by many requests', () => {
  it(`${CONCURRENT} concurrent vLLM requests leave no listener behind and warn nothing`, async () => {
    process.on('warning', onWarning);
    const { fake, engine } = await engineOnFake();
    const shared = new AbortController();
    const gate = fake.holdCompletions();
    const samples = Array.from({ length: CONCURRENT }, () =>
      engine.sample(sampleRequest, shared.signal),
    );
    await expect.poll(() => gate.waiting(), { timeout: 10_000 }).toBe(CONCURRENT);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(1);
    gate.release();
    const results = await Promise.all(samples);
    expect(results.every(([seq]) => seq?.tokens.length === 4)).toBe(true);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    await settle();
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('an abort of the shared signal still fails every request in flight', async () => {
    process.on('warning', onWarning);
    const { fake, engine } = await engineOnFake();
    const shared = new AbortController();
    const gate = fake.holdCompletions();
    const samples = Array.from({ length: CONCURRENT }, () =>
      engine.sample(sampleRequest, shared.signal).then(
        () => 'finished',
        (error: unknown) => error,
      ),
    );
    await expect.poll(() => gate.waiting(), { timeout: 10_000 }).toBe(CONCURRENT);
    const reason = new Error('step cancelled');
    shared.abort(reason);
    const outcomes = await Promise.all(samples);
    gate.release();
    expect(outcomes.every((outcome) => outcome === reason)).toBe(true);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
  });
});

describe('linkSignals', () => {
  it('puts one listener on each source however many signals share it, removed on dispose', () => {
    const long = new AbortController();
    const other = new AbortController();
    const links = Array.from({ length: CONCURRENT }, () =>
      linkSignals(long.signal, undefined, other.signal),
    );
    expect(getEventListeners(long.signal, 'abort')).toHaveLength(1);
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(1);
    links.slice(1).forEach((link) => link.dispose());
    expect(getEventListeners(long.signal, 'abort')).toHaveLength(1);
    links[0]?.dispose();
    links[0]?.dispose();
    expect(getEventListeners(long.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0);
  });

  it('aborts only the signals still linked, with the source’s reason', () => {
    const source = new AbortController();
    const kept = linkSignals(source.signal);
    const disposed = linkSignals(source.signal);
    disposed.dispose();
    source.abort(new Error('gone'));
    expect(kept.signal.aborted).toBe(true);
    expect((kept.signal.reason as Error).message).toBe('gone');
    expect(disposed.signal.aborted).toBe(false);
    kept.dispose();
    const late = linkSignals(source.signal);
    expect(late.signal.aborted).toBe(true);
    expect(getEventListeners(source.signal, 'abort')).toHaveLength(0);
  });
});
