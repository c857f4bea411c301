// Sentinel failover with a replica that is behind (docs/reliability.md "What a failover keeps"):
// one primary, one replica and three sentinels on loopback, the control plane in-process and a
// worker process running the real SFT executor (failover-stack.ts). The replica is stopped
// (SIGSTOP) and the replication stream backed up behind filler (packages/store/test/replicas.ts
// backUpReplication) so that it falls behind: what the primary takes next never reaches it.
// Then the primary is killed -9 and the replica resumed and promoted. What Anneal acknowledged before
// — the submission's 201, the steps the worker went on from, every event an SSE client
// received — must all be on the promoted replica; what it could not confirm was refused (503
// ANNEAL_ERR_NOT_REPLICATED for a submission) or is sent again. The run ends `succeeded` with
// every step once in its history and once on the client's stream, and no redis_data_lost
// notice (nothing acknowledged was lost, so nothing had to be repaired).
//
// `npm test`: mid-run, at a seeded step. ANNEAL_SOAK=1 (`npm run soak`): also across the run's
// start (the worker's start transition is what the replica lacks) and at three more seeds.
// Figures: kill -> sentinels name the replica (detect) and kill -> the run's next committed
// step (recover).
import { describe, expect, it } from 'vitest';
import { ControlPlaneEnvError, parseEnv } from '@anneal/control-plane';
import { getRun, getTransitions, readEvents, readSteps } from '@anneal/store';
import { WorkerConfigError, parseWorkerEnv } from '@anneal/worker';
import { backUpReplication } from '../../../packages/store/test/replicas.ts';
import { recordResult } from '../../worker/test/reliability/results.ts';
import { pick, seededRandom } from '../../worker/test/reliability/seeded.ts';
import { type FailoverStack, WAIT_TIMEOUT_MS, startFailoverStack } from './failover-stack.ts';
import { type SseClient, sseClient } from './sse-client.ts';

// Read here only (the test's own switches).
const SEED = Number(process.env.ANNEAL_RELIABILITY_SEED ?? '20261201');
const SOAK = process.env.ANNEAL_SOAK === '1';
const STEPS = 16;
const SPEC = JSON.stringify({ kind: 'sft', steps: STEPS, batchSize: 2, checkpointInterval: 4 });

const lastStep = async (s: FailoverStack, runId: string) =>
  (await getRun(s.store, runId))?.lastStep ?? 0;

/** WAITs the primary has answered (one that ran out counts once it returns). */
async function waitCalls(s: FailoverStack): Promise<number> {
  const stats = String(await s.primaryClient().info('commandstats'));
  return Number(/^cmdstat_wait:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
}

function submit(s: FailoverStack, idempotencyKey?: string): Promise<Response> {
  return s.api('/v1/runs', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(idempotencyKey !== undefined && { 'idempotency-key': idempotencyKey }),
    },
    body: SPEC,
  });
}

function follow(s: FailoverStack, runId: string): SseClient {
  return sseClient({
    url: `${s.plane.url}/v1/runs/${runId}/events`,
    token: s.token,
    finished: (c) =>
      c.events.some((e) => e.type === 'run:state' && ['succeeded', 'failed'].includes(e.to ?? '')),
    stopAfterMs: 300_000,
    retryMs: 50,
  });
}

/** Kills the primary while the replica is stopped, then resumes and waits for its promotion. */
async function failOver(s: FailoverStack): Promise<{ killedAt: number; detectMs: number }> {
  const killedAt = Date.now();
  await s.primary.kill();
  s.replica.resume();
  await s.eventually(
    async () => (await s.sentinels.primary()) === `127.0.0.1:${s.replica.port}`,
    60_000,
    'replica promoted',
  );
  return { killedAt, detectMs: Date.now() - killedAt };
}

/** The run ends succeeded; its history, its stream and the client's stream hold every step once
 * and the client's events are all still in the stream. Returns lost / duplicated counts. */
async function checkOutcome(s: FailoverStack, runId: string, client: SseClient) {
  await s
    .eventually(
      async () => {
        const run = await getRun(s.store, runId);
        if (run?.state === 'failed') throw new Error(`run failed: ${run.error}`);
        return run?.state === 'succeeded';
      },
      150_000,
      'run succeeded',
    )
    .catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${JSON.stringify(await getTransitions(s.store, runId))}`);
    });
  await client.done;
  const expected = Array.from({ length: STEPS }, (_, i) => i + 1);
  const stream = await readEvents(s.store, runId, '0', 10_000);
  const streamIds = new Set(stream.map((e) => e.id));
  const committed = stream
    .filter((e) => e.event.type === 'step:committed')
    .map((e) => (e.event as { step: number }).step);
  const notices = stream.filter((e) => e.event.type === 'run:notice');
  const steps = (await readSteps(s.store, runId)).map((r) => r.step);
  // Taken back: events a client received that the stream no longer has.
  const lost =
    client.ids().filter((id) => !streamIds.has(id)).length +
    expected.filter((step) => !steps.includes(step)).length;
  const duplicated =
    committed.length -
    new Set(committed).size +
    client.steps().length -
    new Set(client.steps()).size;
  expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
  expect(steps).toEqual(expected);
  expect(committed).toEqual(expected);
  expect(client.steps()).toEqual(expected);
  expect(notices.map((e) => e.event)).toEqual([]);
  const transitions = (await getTransitions(s.store, runId)).map((t) => t.to);
  return { lost, duplicated, transitions };
}

describe('REDIS_URL accepts Sentinel', () => {
  it('a malformed Sentinel URL is a configuration error naming REDIS_URL', () => {
    const bad = { REDIS_URL: 'redis+sentinel://u:secret@127.0.0.1/anneal-primary' };
    expect(() => parseEnv(bad)).toThrow(ControlPlaneEnvError);
    expect(() => parseEnv(bad)).toThrow(/REDIS_URL .*needs host:port/);
    expect(() => parseWorkerEnv(bad)).toThrow(WorkerConfigError);
    expect(() => parseWorkerEnv(bad)).toThrow(/REDIS_URL/);
    expect(() => parseWorkerEnv(bad)).not.toThrow(/secret/);
  });
});

/** Mid-run: the replica stops after a seeded step; the worker's next step reaches the primary
 * only; a submission meanwhile is refused; the primary dies. */
async function midRun(seed: number): Promise<void> {
  const s = await startFailoverStack();
  try {
    s.startWorker();
    const killAfter = pick(seededRandom(seed + 7), 4, STEPS - 6);
    const created = await submit(s);
    expect(created.status).toBe(201);
    const runId = ((await created.json()) as { id: string }).id;
    const client = follow(s, runId);
    await s.eventually(
      async () => {
        if ((await getRun(s.store, runId))?.state === 'succeeded') {
          throw new Error('the run ended before the failover');
        }
        return (await lastStep(s, runId)) >= killAfter;
      },
      150_000,
      `step ${killAfter} committed`,
    );
    s.replica.pause();
    const pausedAt = await lastStep(s, runId);
    await backUpReplication(s.primary); // what the primary takes from now on dies with it
    // A WAIT ran out since: a write of the worker (its step, or the checkpoint pointer after
    // it) is on the primary, which cannot have it confirmed; the worker waits on it.
    const waits = await waitCalls(s);
    await s.eventually(async () => (await waitCalls(s)) > waits, 60_000, 'an unconfirmed write');
    const unconfirmed = await lastStep(s, runId);
    // A submission now is not acknowledged: 503, not 201.
    const key = `retry-${seed}`;
    const during = await submit(s, key);
    expect(during.status).toBe(503);
    expect(((await during.json()) as { code: string }).code).toBe('ANNEAL_ERR_NOT_REPLICATED');
    const { killedAt, detectMs } = await failOver(s);
    await s.eventually(
      async () => (await lastStep(s, runId)) > unconfirmed,
      90_000,
      'a step committed after the failover',
    );
    const recoverMs = Date.now() - killedAt;
    // The client retries the refused submission with its key: now it is acknowledged.
    expect([200, 201]).toContain((await submit(s, key)).status);
    const { lost, duplicated, transitions } = await checkOutcome(s, runId, client);
    await recordResult({
      scenario: 'redis sentinel failover',
      variant:
        seed === SEED ? 'lagging replica, mid-run' : `lagging replica, mid-run, seed ${seed}`,
      lost,
      duplicated,
      detectMs,
      recoverMs,
      detail:
        `sft ${STEPS} steps; replica stopped after step ${pausedAt}; the worker's writes from ` +
        `step ${unconfirmed} on and a submission (503) unconfirmed when the primary was killed ` +
        `(seed ${seed}); WAIT 1 replica, ` +
        `${WAIT_TIMEOUT_MS} ms; 3 sentinels, quorum 2, down-after 1000 ms; SSE client saw ` +
        `${client.steps().length} steps once each; transitions ${transitions.join(' > ')}`,
    });
  } finally {
    await s.stop();
  }
}

/** Across the start: the run was acknowledged (201); the replica stops before the worker takes
 * it, so the start is on the primary only when it dies. */
async function acrossStart(): Promise<void> {
  const s = await startFailoverStack();
  try {
    const created = await submit(s);
    expect(created.status).toBe(201);
    const runId = ((await created.json()) as { id: string }).id;
    const client = follow(s, runId);
    s.replica.pause();
    await backUpReplication(s.primary);
    s.startWorker();
    await s.eventually(
      async () => (await getRun(s.store, runId))?.state === 'running',
      60_000,
      'the start on the primary',
    );
    const { killedAt, detectMs } = await failOver(s);
    await s.eventually(async () => (await lastStep(s, runId)) >= 1, 90_000, 'a first step');
    const recoverMs = Date.now() - killedAt;
    const { lost, duplicated, transitions } = await checkOutcome(s, runId, client);
    await recordResult({
      scenario: 'redis sentinel failover',
      variant: 'lagging replica, across the start',
      lost,
      duplicated,
      detectMs,
      recoverMs,
      detail:
        `sft ${STEPS} steps; replica stopped between the 201 and the worker's start, primary ` +
        `killed once the start was on it; WAIT 1 replica, ${WAIT_TIMEOUT_MS} ms; transitions ` +
        transitions.join(' > '),
    });
  } finally {
    await s.stop();
  }
}

/** `npm test` runs the first; `npm run soak` all of them (registered, not skipped). */
type Scenario = readonly [name: string, run: () => Promise<void>, timeoutMs: number];
const SOAK_SCENARIOS: readonly Scenario[] = [
  ['across the run start', acrossStart, 400_000],
  [
    'mid-run at three more seeds',
    async () => {
      for (const seed of [SEED + 1, SEED + 2, SEED + 3]) await midRun(seed);
    },
    1_200_000,
  ],
];
const SCENARIOS: readonly Scenario[] = [
  [
    'mid-run: nothing acknowledged is lost, nothing is recorded or streamed twice',
    () => midRun(SEED),
    400_000,
  ],
  ...(SOAK ? SOAK_SCENARIOS : []),
];

describe('Sentinel failover with a replica that is behind', () => {
  for (const [name, run, timeoutMs] of SCENARIOS) it(name, run, timeoutMs);
});
