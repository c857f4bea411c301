// TEST ONLY process entry: the production worker (real executors, embedded engines, configured
// by the environment like src/main.ts) with one setting the environment does not expose — the
// registry heartbeat TTL, passed as argv[2] in seconds — so that a crash test can measure
// heartbeat-based detection without waiting the 30 s production TTL. Spawned by
// reliability/real-worker.ts; kill -9 is the only way it is stopped.
import { defineWorkerConfig, loadWorkerConfig, startWorker } from '../src/index.ts';

const ttl = Number(process.argv[2]);
if (!Number.isFinite(ttl) || ttl <= 0) {
  console.error(
    `real-worker-entry: argv[2] must be the heartbeat TTL in seconds, got ${process.argv[2]}`,
  );
  process.exit(2);
}
const config = loadWorkerConfig(process.env);
await startWorker(defineWorkerConfig({ ...config, heartbeatTtlSeconds: ttl }));
