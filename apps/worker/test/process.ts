// Spawns a real worker process for process-level tests (kill -9, SIGTERM, bad env): by default
// the test entry (worker-entry.ts: test executors injected in code), or the production entry
// (src/main.ts) where a test needs the real one, or the pipelined GRPO entry. crashTestWorkers is
// the crash tests' shared set-up: processes on a TestEnv's store with short lock timings, all
// killed after each test.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REDIS_URL, type TestEnv } from './helpers.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '../../..');
export const ENTRIES = {
  test: path.join(here, 'worker-entry.ts'),
  production: path.join(REPO_ROOT, 'apps/worker/src/main.ts'),
  /** The real grpo executor on embedded engines, commits held on request (ledger-grpo-entry.ts). */
  ledgerGrpo: path.join(here, 'ledger-grpo-entry.ts'),
  /** The real grpo executor on in-memory fake engines (pipelined-grpo-entry.ts). */
  pipelinedGrpo: path.join(here, 'pipelined-grpo-entry.ts'),
  /** The real executors on embedded engines whose trainer diverges (guardrail-grpo-entry.ts). */
  guardrailGrpo: path.join(here, 'guardrail-grpo-entry.ts'),
  /** src/main.ts plus a heartbeat TTL given as its argument (reliability/real-worker.ts). */
  real: path.join(here, 'real-worker-entry.ts'),
  /** A start-up that fails at its metrics server step (startup-cleanup.redis.test.ts). */
  failedStart: path.join(here, 'failed-start-entry.ts'),
} as const;

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

export function spawnWorker(
  env: Record<string, string>,
  entry: keyof typeof ENTRIES = 'test',
  args: readonly string[] = [],
): WorkerProcess {
  // The test runner's own ANNEAL_* settings must not leak into the worker under test.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('ANNEAL_')),
  );
  const child = spawn(
    process.execPath,
    ['--conditions=@anneal/source', '--import', 'tsx', ENTRIES[entry], ...args],
    {
      cwd: REPO_ROOT,
      env: { ...inherited, ANNEAL_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  return { child, output: () => output, exited };
}

export interface CrashTestWorkers {
  /** A worker process `id` on the test env's store, pool and artifact dir; `extra` env on top. */
  spawn(id: string, extra?: Record<string, string>, entry?: keyof typeof ENTRIES): WorkerProcess;
  /** kill -9 of every process still running, waiting for each to exit (afterEach). */
  killAll(): Promise<void>;
}

export function crashTestWorkers(env: () => TestEnv): CrashTestWorkers {
  const spawned: WorkerProcess[] = [];
  return {
    spawn(id, extra = {}, entry = 'test') {
      const { prefix, pool, artifactDir } = env();
      const p = spawnWorker(
        {
          REDIS_URL,
          ANNEAL_KEY_PREFIX: prefix,
          ANNEAL_POOL: pool,
          ANNEAL_WORKER_ID: id,
          ANNEAL_ARTIFACT_DIR: artifactDir,
          ANNEAL_METRICS_PORT: '0',
          ANNEAL_METRICS_HOST: '127.0.0.1',
          ANNEAL_HEARTBEAT_SECONDS: '1',
          // Long enough that a live worker on a loaded machine (event-loop stalls of seconds)
          // keeps its lock: a 2 s lock expired under load and the run retried twice more than
          // the one kill.
          ANNEAL_LOCK_DURATION_MS: '8000',
          ANNEAL_STALLED_INTERVAL_MS: '2000',
          ...extra,
        },
        entry,
      );
      spawned.push(p);
      return p;
    },
    async killAll() {
      for (const p of spawned.splice(0)) {
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
        await p.exited;
      }
    },
  };
}
