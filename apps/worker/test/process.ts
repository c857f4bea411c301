// Spawns a real worker process for process-level tests (kill -9, SIGTERM, bad env): by default
// the test entry (worker-entry.ts: test executors injected in code), or the production entry
// (src/main.ts) where a test needs the real one.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '../../..');
export const ENTRIES = {
  test: path.join(here, 'worker-entry.ts'),
  production: path.join(REPO_ROOT, 'apps/worker/src/main.ts'),
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
): WorkerProcess {
  // The test runner's own ANNEAL_* settings must not leak into the worker under test.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('ANNEAL_')),
  );
  const child = spawn(
    process.execPath,
    ['--conditions=@anneal/source', '--import', 'tsx', ENTRIES[entry]],
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
