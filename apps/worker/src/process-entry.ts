// The worker as an OS process: parse the environment once, start the worker, shut down
// gracefully on SIGTERM/SIGINT, exit 2 on a configuration error. main.ts runs it with the real
// executors; process-level tests (kill -9) run it from their own entry script with test
// executors passed in code (apps/worker/test/worker-entry.ts) — never through the environment.
import { loadWorkerConfig } from './env.ts';
import { WorkerConfigError } from './errors.ts';
import { type StartWorkerOptions, startWorker } from './worker.ts';

function fail(error: unknown): never {
  const message = error instanceof WorkerConfigError ? `anneal worker: ${error.message}` : error;
  console.error(message);
  process.exit(error instanceof WorkerConfigError ? 2 : 1);
}

export async function runWorkerProcess(
  env: Readonly<Record<string, string | undefined>>,
  options: StartWorkerOptions = {},
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
  const started: { handle?: Awaited<ReturnType<typeof startWorker>> } = {};
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
    // Backstop: if close() itself hangs (Redis gone), exit shortly after the grace period.
    const backstop = setTimeout(() => process.exit(1), (config.shutdownGraceSeconds + 10) * 1000);
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
  started.handle = await startWorker(config, options).catch(fail);
  if (pending) stop(pending);
}
