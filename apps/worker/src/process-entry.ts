// The worker as an OS process: parse the environment once, start the worker, shut down
// gracefully on SIGTERM/SIGINT and exit 0 once that shutdown is done, exit 2 on a configuration
// error. `anneal worker` and main.ts run it with the real executors; process-level tests (kill
// -9) run it from their own entry script with test executors passed in code
// (apps/worker/test/worker-entry.ts) — never through the environment.
//
// The exit after a graceful shutdown is explicit: by then every run is at a step boundary or
// handed back and every connection and engine is closed, and a timer some library left armed
// must not keep the process (and a rolling restart) waiting for the backstop.
import { loadWorkerConfig } from './env.ts';
import { WorkerConfigError } from './errors.ts';
import { type StartWorkerOptions, type WorkerHandle, startWorker } from './worker.ts';

/** What the process around the worker adds (the CLI's ready line and start-up messages). */
export interface WorkerProcessHooks {
  /** Called once the worker has started. */
  onStarted?(handle: WorkerHandle): void;
  /** A failed start (Redis unreachable, a bad operator config): default prints it, exits 1. */
  onStartupError?(error: unknown): Promise<never>;
}

function fail(error: unknown): never {
  const message = error instanceof WorkerConfigError ? `anneal worker: ${error.message}` : error;
  console.error(message);
  process.exit(error instanceof WorkerConfigError ? 2 : 1);
}

export async function runWorkerProcess(
  env: Readonly<Record<string, string | undefined>>,
  options: StartWorkerOptions = {},
  hooks: WorkerProcessHooks = {},
): Promise<void> {
  const config = (() => {
    try {
      return loadWorkerConfig(env);
    } catch (error) {
      return fail(error);
    }
  })();
  // Handlers first: a SIGTERM while the worker is starting (it may already hold its registry
  // record) is honoured once it has started, not answered by the default handler's hard exit.
  const started: { handle?: WorkerHandle } = {};
  let pending: NodeJS.Signals | undefined;
  let signalled = false;
  const stop = (signal: NodeJS.Signals) => {
    const handle = started.handle;
    if (!handle) {
      pending ??= signal;
      return;
    }
    if (signalled) return; // a second signal does not cut the grace period short
    signalled = true;
    // Backstop: if close() itself hangs (Redis gone), exit shortly after the grace period, saying
    // what it was waiting for.
    const backstopSeconds = config.shutdownGraceSeconds + 10;
    const backstop = setTimeout(() => {
      console.error(
        `anneal worker: shutdown after ${signal} did not finish within ${backstopSeconds} s ` +
          `(waiting for ${handle.closingStep() ?? 'nothing'}; open: ` +
          `${process.getActiveResourcesInfo().join(', ')}); exiting with 1`,
      );
      process.exit(1);
    }, backstopSeconds * 1000);
    backstop.unref();
    handle.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`anneal worker: shutdown after ${signal} failed:`, error);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  started.handle = await startWorker(config, options).catch(hooks.onStartupError ?? fail);
  hooks.onStarted?.(started.handle);
  if (pending) stop(pending);
}
