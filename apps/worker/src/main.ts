// Process entry: `node --import tsx apps/worker/src/main.ts` (or `anneal worker`). Parses the
// environment once, starts the worker, and shuts down gracefully on SIGTERM/SIGINT.
import { loadWorkerConfig } from './env.ts';
import { WorkerConfigError } from './errors.ts';
import { startWorker } from './worker.ts';

function fail(error: unknown): never {
  const message = error instanceof WorkerConfigError ? `anneal worker: ${error.message}` : error;
  console.error(message);
  process.exit(error instanceof WorkerConfigError ? 2 : 1);
}

const config = (() => {
  try {
    return loadWorkerConfig(process.env);
  } catch (error) {
    return fail(error);
  }
})();
const handle = await startWorker(config).catch(fail);

let signalled = false;
const stop = (signal: NodeJS.Signals) => {
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
