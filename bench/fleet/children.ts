// Spawning the bench's child processes (the control plane, the worker processes) and talking to
// them over IPC: each request gets exactly one answer, in order.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ChildRequest, Execution } from './executions.ts';

type ChildEnv = Record<string, string | undefined>;

/** What every child process is started with: its environment and extra Node options (e.g.
 * `--cpu-prof`). */
export interface ChildSetup {
  env: ChildEnv;
  nodeOptions: readonly string[];
}

function spawnTs(
  script: string,
  args: string[],
  { env, nodeOptions }: ChildSetup,
  stdout: 'pipe' | 'inherit',
) {
  const entry = fileURLToPath(new URL(`./${script}`, import.meta.url));
  return spawn(
    process.execPath,
    [...nodeOptions, '--conditions=@anneal/source', '--import', 'tsx', entry, ...args],
    {
      env,
      stdio: ['ignore', stdout, 'inherit', 'ipc'],
    },
  );
}

/** Answers to requests in the order they were sent; rejects all if the child exits. */
function channel(child: ChildProcess) {
  const pending: Array<{ resolve(m: ChildMessage): void; reject(e: Error): void }> = [];
  child.on('message', (message: ChildMessage) => pending.shift()?.resolve(message));
  child.once('exit', (code) => {
    for (const p of pending.splice(0))
      p.reject(new Error(`fleet child ${child.pid} exited with ${code}`));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    exited,
    /** The next message, without sending anything (the child's start-up `ready`). */
    next: () => new Promise<ChildMessage>((resolve, reject) => pending.push({ resolve, reject })),
    request(request: ChildRequest): Promise<ChildMessage> {
      const answer = new Promise<ChildMessage>((resolve, reject) =>
        pending.push({ resolve, reject }),
      );
      child.send(request);
      return answer;
    },
  };
}

const cpuOf = (m: ChildMessage) => (m.type === 'report' ? m.cpuMs : Number.NaN);

export interface ControlPlaneProcess {
  url: string;
  cpuMs(): Promise<number>;
  stop(): Promise<void>;
}

/** The control plane; resolves with its URL once it listens. */
export async function startControlPlane(setup: ChildSetup): Promise<ControlPlaneProcess> {
  const child = spawnTs('control-plane.ts', [], setup, 'pipe');
  const ipc = channel(child);
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const newline = buffer.indexOf('\n');
      if (newline >= 0) resolve((JSON.parse(buffer.slice(0, newline)) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`fleet control plane exited with ${code}`)));
  });
  return {
    url,
    cpuMs: async () => cpuOf(await ipc.request({ type: 'report' })),
    async stop() {
      child.kill('SIGTERM');
      await ipc.exited;
    },
  };
}

/** A worker process (worker-entry.ts) driven over IPC. */
export interface WorkerProcess {
  report(): Promise<{ executions: Execution[]; cpuMs: number }>;
  /** Starts `count` more Anneal workers in this process. */
  grow(count: number): Promise<void>;
  baseline(options: { queue: string; prefix: string; concurrency: number }): Promise<void>;
  baselineStop(): Promise<void>;
  /** Ends the runs held until released. */
  release(): Promise<void>;
  stop(): Promise<void>;
}

export async function startWorkerProcess(
  setup: ChildSetup,
  workers: number,
): Promise<WorkerProcess> {
  const child = spawnTs('worker-entry.ts', [String(workers)], setup, 'inherit');
  const ipc = channel(child);
  await ipc.next();
  return {
    async report() {
      const m = await ipc.request({ type: 'report' });
      return { executions: m.type === 'report' ? m.executions : [], cpuMs: cpuOf(m) };
    },
    async grow(count) {
      await ipc.request({ type: 'grow', count });
    },
    async baseline(options) {
      await ipc.request({ type: 'baseline', ...options });
    },
    async baselineStop() {
      await ipc.request({ type: 'baseline-stop' });
    },
    async release() {
      await ipc.request({ type: 'release' });
    },
    async stop() {
      await ipc.request({ type: 'stop' });
      await ipc.exited;
    },
  };
}
