// Fair share of one vLLM endpoint across runs on two worker processes (docs/operations.md
// "Fair share of an endpoint"): each "process" is a FleetShare on its own Redis connection with
// its own vLLM client, all against one fake vLLM server that seats at most `--max-num-seqs`
// sequences (test/vllm/sched-queue.ts). Shares are counted over the completions served while
// every run still has requests waiting (saturation).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VllmInferenceEngine } from '@anneal/engines';
import { FakeVllmServer } from '@anneal/engines/testing';
import { createStoreContext, readFairShare, type StoreContext } from '@anneal/store';
import { type TestEnv, eventually, testEnv } from '../../test/helpers.ts';
import { FleetShare, fairShareInference, type FleetServed } from './fair-share.ts';

const CAPACITY = 8;
let env: TestEnv;
let fake: FakeVllmServer;
const open: Array<{ close(): Promise<void> | void }> = [];

beforeEach(async () => {
  env = await testEnv();
  // Each completion takes 20 ms: long enough that requests overlap, short enough to keep the
  // test quick.
  fake = await FakeVllmServer.start({ maxNumSeqs: CAPACITY, holdHeadersMs: 20 });
  open.push(fake);
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
  await env.cleanup();
});

/** One worker process: its own connection, FleetShare and vLLM client. */
function workerProcess(): { store: StoreContext; share: FleetShare; engine: VllmInferenceEngine } {
  const store = createStoreContext(env.connection(), env.prefix);
  const share = new FleetShare(store, 'gen', CAPACITY);
  const engine = new VllmInferenceEngine({
    name: 'gen',
    replicas: [fake.url],
    model: 'base-model',
    maxInFlight: 1024, // the fair share, not the process limit, is what binds here
    healthCheckIntervalMs: 0,
  });
  open.push(share, engine);
  return { store, share, engine };
}

const request = (i: number) => ({
  prompt: [1, i % 200],
  n: 1,
  maxTokens: 3,
  temperature: 1,
  topP: 1,
});

/** Starts `count` requests of a run at once; every served one is appended to `served`. */
function flood(
  proc: ReturnType<typeof workerProcess>,
  runId: string,
  weight: number,
  count: number,
  served: FleetServed[],
  signal?: AbortSignal,
): Promise<unknown> {
  const engine = fairShareInference(
    proc.engine,
    proc.share,
    { id: runId, weight, priority: 0 },
    (s) => {
      served.push(s);
    },
  );
  return Promise.allSettled(
    Array.from({ length: count }, (_, i) => engine.sample(request(i), signal)),
  );
}

/** Completions 24 to 264: past the start (the first run to ask takes the idle endpoint and
 * gives seats back only as its requests end: nothing is preempted) and while both runs still
 * have requests waiting (each sends 300). */
const WINDOW = [24, 264] as const;

function inWindow(served: readonly FleetServed[], runId: string) {
  return served.slice(...WINDOW).filter((s) => s.runId === runId);
}

describe('fair share of an endpoint across runs and worker processes', () => {
  it.each([
    [1, 1],
    [3, 1],
  ])(
    'runs of weights %i:%i on two processes get shares within 10 percent of their weights',
    async (wa, wb) => {
      const [one, two] = [workerProcess(), workerProcess()];
      const served: FleetServed[] = [];
      await Promise.all([
        flood(one, 'run_a', wa, 300, served),
        flood(two, 'run_b', wb, 300, served),
      ]);
      const measured = inWindow(served, 'run_a').length / (WINDOW[1] - WINDOW[0]);
      const expected = wa / (wa + wb);
      expect(
        Math.abs(measured - expected) / expected,
        `run_a share ${measured}`,
      ).toBeLessThanOrEqual(0.1);
      // Token share too (every request here generates the same number of tokens).
      const tokens = (id: string) => inWindow(served, id).reduce((sum, s) => sum + s.tokens, 0);
      const tokenShare = tokens('run_a') / (tokens('run_a') + tokens('run_b'));
      expect(Math.abs(tokenShare - expected) / expected).toBeLessThanOrEqual(0.1);
      // The server never had more than its --max-num-seqs running, and nothing waited in it.
      expect(fake.scheduler?.peakRunning).toBeLessThanOrEqual(CAPACITY);
      console.info(
        `weights ${wa}:${wb}: run_a served ${(measured * 100).toFixed(1)} % of completions ${WINDOW.join('-')}, ` +
          `${((served.slice(0, WINDOW[0]).filter((s) => s.runId === 'run_a').length / WINDOW[0]) * 100).toFixed(1)} % of the first ${WINDOW[0]} (expected ${(expected * 100).toFixed(1)} %)`,
      );
      // Every lease was given back and counted.
      const runs = await readFairShare(env.store, 'gen');
      expect(runs.map((r) => [r.runId, r.held, r.requests])).toEqual([
        ['run_a', 0, 300],
        ['run_b', 0, 300],
      ]);
    },
  );

  it('a run of 32 requests is not starved by one of 512 that started first', async () => {
    const [one, two] = [workerProcess(), workerProcess()];
    const served: FleetServed[] = [];
    const stopBig = new AbortController();
    const big = flood(one, 'run_big', 1, 512, served, stopBig.signal);
    await eventually(() => served.length > 8); // big is running alone
    const before = served.length;
    await flood(two, 'run_small', 1, 32, served);
    stopBig.abort();
    await big;
    const small = served.filter((s) => s.runId === 'run_small');
    expect(small).toHaveLength(32);
    // Equal weights: once the big run's extra seats drain, the small run has half the capacity,
    // so its 32 are served among the next ~64-90 completions; first come, first served they
    // would come after the big run's remaining ~500.
    const lastSmall = served.lastIndexOf(small[small.length - 1]!);
    console.info(`small run's 32 served by completion ${lastSmall - before + 1} after it started`);
    expect(lastSmall - before + 1).toBeLessThanOrEqual(100);
  });

  it("a crashed worker's lease expires and its capacity goes to the others", async () => {
    const crashed = new FleetShare(createStoreContext(env.connection(), env.prefix), 'gen', 1, {
      ttlMs: 300,
    });
    const alive = new FleetShare(createStoreContext(env.connection(), env.prefix), 'gen', 1, {
      ttlMs: 300,
    });
    open.push(alive);
    await crashed.acquire('run_dead', 1, 1); // held, never released
    crashed.close(); // the process is gone: no more renewals
    const waiting = alive.acquire('run_live', 1, 1);
    expect((await readFairShare(env.store, 'gen')).find((r) => r.runId === 'run_dead')?.held).toBe(
      1,
    );
    const lease = await waiting; // granted once the dead lease expired
    expect(lease.waitedSeconds).toBeGreaterThan(0);
    const after = await readFairShare(env.store, 'gen');
    expect(after.map((r) => [r.runId, r.held])).toEqual([['run_live', 1]]);
    await lease.release(0);
  });

  it('a live worker renews its leases past their TTL', async () => {
    const share = new FleetShare(createStoreContext(env.connection(), env.prefix), 'gen', 1, {
      ttlMs: 60_000,
    });
    open.push(share);
    const lease = await share.acquire('run_a', 1, 1);
    const expiry = async () => {
      const ids = await env.redis.zrange(`${env.prefix}:fair:gen:leases`, 0, -1, 'WITHSCORES');
      return Number(ids[1]);
    };
    const first = await expiry();
    await eventually(async () => {
      await share.renew();
      return (await expiry()) > first;
    });
    await lease.release(0);
    expect(await env.redis.zcard(`${env.prefix}:fair:gen:leases`)).toBe(0);
  });
});
