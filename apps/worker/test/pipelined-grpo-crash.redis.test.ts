// kill -9 of a worker process in the middle of a pipelined GRPO run (rollout.maxPolicyLag 1:
// the next step's batch is always in flight while a step trains), then a second worker resumes
// from the last checkpoint: every step is recorded exactly once (docs/recipe.md "Pipelined
// GRPO"). The worker runs the real grpo executor on in-memory fake engines
// (pipelined-grpo-entry.ts); the store, queue and processes are real.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, getTransitions, readSteps } from '@anneal/store';
import { type TestEnv, REDIS_URL, eventually, testEnv } from './helpers.ts';
import { type WorkerProcess, REPO_ROOT } from './process.ts';
import { spawn } from 'node:child_process';

const ENTRY = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pipelined-grpo-entry.ts');
const STEPS = 8;

let env: TestEnv;
const spawned: WorkerProcess[] = [];
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  for (const p of spawned.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  await env.cleanup();
});

function worker(id: string): WorkerProcess {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('ANNEAL_')),
  );
  const child = spawn(process.execPath, ['--conditions=@anneal/source', '--import', 'tsx', ENTRY], {
    cwd: REPO_ROOT,
    env: {
      ...inherited,
      ANNEAL_LOG_LEVEL: 'warn',
      REDIS_URL,
      ANNEAL_KEY_PREFIX: env.prefix,
      ANNEAL_POOL: env.pool,
      ANNEAL_WORKER_ID: id,
      ANNEAL_ARTIFACT_DIR: env.artifactDir,
      ANNEAL_METRICS_PORT: '0',
      ANNEAL_METRICS_HOST: '127.0.0.1',
      ANNEAL_HEARTBEAT_SECONDS: '1',
      // Long enough that a live worker on a loaded machine (event-loop stalls of seconds) keeps its
      // lock: a 2 s lock expired under load and the run retried twice more than the one kill.
      ANNEAL_LOCK_DURATION_MS: '8000',
      ANNEAL_STALLED_INTERVAL_MS: '2000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const p = { child, output: () => output, exited };
  spawned.push(p);
  return p;
}

const withOutput = (w: WorkerProcess) => (error: unknown) => {
  throw new Error(`${String(error)}\n--- ${w.output()}`);
};

describe('pipelined GRPO (rollout.maxPolicyLag 1)', () => {
  it('kill -9 with a batch in flight: another worker resumes; every step recorded once', async () => {
    const a = worker('pipelined-a');
    const runId = await env.submit(
      [
        'kind: grpo',
        `steps: ${STEPS}`,
        'checkpointInterval: 3',
        'seed: 7',
        'rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 64, maxPolicyLag: 1 }',
        'labels: { step-ms: "100" }',
      ].join('\n'),
    );
    await eventually(
      async () => ((await getRun(env.store, runId))?.lastStep ?? 0) >= 4,
      60_000,
      'a ran 4 steps',
    ).catch(withOutput(a));
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    const atCrash = await getRun(env.store, runId);
    expect(atCrash?.state).toBe('running');
    expect(atCrash?.lastStep).toBeLessThan(STEPS);

    const b = worker('pipelined-b');
    await eventually(
      async () => (await getRun(env.store, runId))?.state === 'succeeded',
      60_000,
      'b finished',
    ).catch(withOutput(b));
    const transitions = (await getTransitions(env.store, runId)).map((t) => t.to);
    expect(transitions).toEqual(['queued', 'running', 'retrying', 'running', 'succeeded']);
    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => s.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    // pipelined throughout: every step after the first of an attempt trained on a lagged batch
    expect(steps.at(-1)?.metrics['policy_lag/max']).toBe(1);
  }, 120_000);
});
