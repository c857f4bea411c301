// Child process of the fleet bench: real Anneal workers (startWorker, configured from the
// environment by loadWorkerConfig like apps/worker/src/main.ts) that differ from production only in what
// is passed in code — the instant executor for every run kind and engines that do nothing.
// argv[2] = workers to start now; IPC (executions.ts `ChildRequest`) grows the process to more
// workers (each with its own id, Redis connections, BullMQ Worker, heartbeat and control
// subscription, as separate processes would have), runs the plain BullMQ baseline worker,
// reports executions and CPU time, and stops everything gracefully.
import { RUN_KINDS } from '@anneal/protocol';
import {
  type WorkerHandle,
  defineWorkerConfig,
  loadWorkerConfig,
  startWorker,
} from '@anneal/worker';
import { type BaselineWorker, startBaselineWorker } from './baseline-worker.ts';
import { type ChildMessage, type ChildRequest, type Execution, cpuMs } from './executions.ts';
import { instantExecutor } from './instant-executor.ts';
import { STUB_EMBEDDED } from './stub-engines.ts';

const initial = Number(process.argv[2]);
if (!Number.isInteger(initial) || initial < 1) {
  console.error(`fleet worker-entry: argv[2] must be a worker count >= 1, got ${process.argv[2]}`);
  process.exit(2);
}
const send = (message: ChildMessage) =>
  new Promise<void>((resolve) => process.send?.(message, undefined, undefined, () => resolve()));
const base = loadWorkerConfig(process.env);
const log: Execution[] = [];
const handles: WorkerHandle[] = [];
let baseline: BaselineWorker | null = null;
let release = () => {};
let released = new Promise<void>((resolve) => (release = resolve));

async function grow(count: number): Promise<void> {
  const started = Array.from({ length: count }, (_, i) => {
    const config = defineWorkerConfig({
      ...base,
      workerId: `${base.workerId}-${handles.length + i}`,
    });
    const executor = instantExecutor(config.workerId, log, () => released);
    const executors = Object.fromEntries(RUN_KINDS.map((kind) => [kind, executor]));
    return startWorker(config, { executors, factories: { embedded: STUB_EMBEDDED } });
  });
  handles.push(...(await Promise.all(started)));
}

async function handle(request: ChildRequest): Promise<ChildMessage> {
  switch (request.type) {
    case 'report':
      return { type: 'report', executions: log, cpuMs: cpuMs() };
    case 'grow':
      await grow(request.count);
      return { type: 'ready', workers: handles.length };
    case 'baseline':
      baseline = await startBaselineWorker({
        redisUrl: base.redisUrl,
        prefix: request.prefix,
        queue: request.queue,
        concurrency: request.concurrency,
        workerId: `${base.workerId}-baseline`,
        log,
      });
      return { type: 'done' };
    case 'baseline-stop':
      await baseline?.close();
      baseline = null;
      return { type: 'done' };
    case 'release':
      release();
      released = new Promise<void>((resolve) => (release = resolve));
      return { type: 'done' };
    case 'stop':
      await Promise.all(handles.map((h) => h.close()));
      return { type: 'done' };
  }
}

// The bench is gone (crashed, killed): so are its workers.
process.once('disconnect', () => process.exit(1));
// One request at a time, in order; the bench waits for each answer.
let queue = Promise.resolve();
process.on('message', (request: ChildRequest) => {
  queue = queue.then(async () => {
    await send(await handle(request));
    if (request.type === 'stop') process.exit(0);
  });
});
await grow(initial);
await send({ type: 'ready', workers: handles.length });
