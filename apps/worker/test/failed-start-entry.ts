// TEST ONLY process entry (startup-cleanup.redis.test.ts): a worker whose start-up fails at its
// metrics server step (injected), after the Redis connections, the heartbeat timer and the
// control subscription exist. It prints the error and returns: the process must then exit by
// itself, with nothing left holding its event loop open.
import { noopLogger } from '@anneal/telemetry';
import { defineWorkerConfig, startWorker } from '../src/index.ts';
import { localWorkerOperatorConfig } from '../src/config.ts';
import { EXECUTORS } from './fixtures/executors.ts';
import { STUB_FACTORIES } from './fixtures/engines.ts';

const [redisUrl, keyPrefix, workerId] = process.argv.slice(2);
try {
  await startWorker(
    defineWorkerConfig({
      redisUrl: redisUrl!,
      keyPrefix: keyPrefix!,
      workerId: workerId!,
      pool: 'default',
      operatorConfig: localWorkerOperatorConfig('default', 1),
      heartbeatSeconds: 0.5,
      metrics: { port: 0, host: '127.0.0.1', runSeriesGraceSeconds: 0 },
    }),
    {
      executors: EXECUTORS,
      factories: STUB_FACTORIES,
      logger: noopLogger,
      startMetricsServer: () => Promise.reject(new Error('injected: metrics server failed')),
    },
  );
  console.log('started (unexpected)');
} catch (error) {
  console.log(`start failed: ${(error as Error).message}`);
}
