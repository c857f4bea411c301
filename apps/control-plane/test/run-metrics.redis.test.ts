// anneal_runs (by state and kind), anneal_runs_transitions_total and
// anneal_queue_wait_duration_seconds on /metrics, for transitions made by the control plane
// (submit, cancel) and by workers (start, finish), each counted once across two replicas.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { finishRun, startRun } from '@anneal/store';
import { buildApp } from '../src/app.ts';
import { TOKENS, type TestPlane, auth, submit, testPlane } from './helpers.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

async function scrapeUntil(
  app: { inject(url: string): Promise<{ body: string }> },
  done: (text: string) => boolean,
): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const text = (await app.inject('/metrics')).body;
    if (done(text)) return text;
    if (Date.now() > deadline) throw new Error(`metrics never matched:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('run metrics on /metrics', () => {
  it('counts runs by state and every transition once, with the queue wait', async () => {
    // A second replica on the same Redis: together they count each transition once.
    const replica = await buildApp({
      operator: plane.operator,
      redis: plane.redis,
      prefix: plane.prefix,
      createBlockingClient: plane.connection,
      defaultMetrics: false,
    });
    await Promise.all([plane.app.ready(), replica.ready()]);
    try {
      const ids: string[] = [];
      for (const kind of ['sft', 'grpo', 'grpo']) {
        ids.push((await submit(plane.app, `kind: ${kind}\nsteps: 2`)).json<{ id: string }>().id);
      }
      const [sft, grpo, cancelled] = ids as [string, string, string];
      await startRun(plane.store, sft, 'w1');
      await finishRun(plane.store, sft, { state: 'succeeded', reason: 'done' });
      await startRun(plane.store, grpo, 'w1');
      const cancel = await plane.app.inject({
        method: 'POST',
        url: `/v1/runs/${cancelled}/cancel`,
        headers: { ...auth(TOKENS.acmeSubmitter), 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(cancel.statusCode).toBe(200);

      const total = (text: string, state: string, kind: string) =>
        sample(text, `anneal_runs_transitions_total{state="${state}",kind="${kind}"}`) ?? 0;
      const both = async () => {
        const [a, b] = await Promise.all([
          plane.app.inject('/metrics'),
          replica.inject('/metrics'),
        ]);
        return [a.body, b.body] as const;
      };
      let texts = await both();
      const deadline = Date.now() + 15_000;
      const sum = (state: string, kind: string) =>
        total(texts[0], state, kind) + total(texts[1], state, kind);
      const all = () =>
        texts
          .flatMap((t) => t.split('\n'))
          .filter((l) => l.startsWith('anneal_runs_transitions_total{'))
          .reduce((acc, l) => acc + Number(l.split(' ').at(-1)), 0);
      // 7 transitions: 3 submitted, 2 started, 1 succeeded, 1 cancelled
      while (all() < 7) {
        if (Date.now() > deadline) throw new Error(`transitions not counted:\n${texts.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
        texts = await both();
      }
      // Summed over replicas: exactly the transitions that happened, none twice.
      expect({
        queuedSft: sum('queued', 'sft'),
        runningSft: sum('running', 'sft'),
        succeededSft: sum('succeeded', 'sft'),
        queuedGrpo: sum('queued', 'grpo'),
        runningGrpo: sum('running', 'grpo'),
        cancelledGrpo: sum('cancelled', 'grpo'),
        failed: sum('failed', 'sft') + sum('failed', 'grpo'),
      }).toEqual({
        queuedSft: 1,
        runningSft: 1,
        succeededSft: 1,
        queuedGrpo: 2,
        runningGrpo: 1,
        cancelledGrpo: 1,
        failed: 0,
      });
      const waits = texts.map(
        (t) => sample(t, 'anneal_queue_wait_duration_seconds_count{pool="default"}') ?? 0,
      );
      expect(waits[0]! + waits[1]!).toBe(2);

      // Runs by state: the same shared state on every replica.
      const text = await scrapeUntil(replica, (t) => t.includes('anneal_runs{'));
      expect(sample(text, 'anneal_runs{state="succeeded",kind="sft"}')).toBe(1);
      expect(sample(text, 'anneal_runs{state="running",kind="grpo"}')).toBe(1);
      expect(sample(text, 'anneal_runs{state="cancelled",kind="grpo"}')).toBe(1);
      expect(sample(text, 'anneal_runs{state="queued",kind="grpo"}')).toBe(0);
      expect(sample(text, 'anneal_runs{state="failed",kind="rm"}')).toBe(0);
    } finally {
      await replica.close();
    }
  });
});
