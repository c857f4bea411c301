// `anneal worker`: run one worker process of a pool (what operators run on each GPU node).
// Config comes from the environment (see apps/worker/README.md); flags override it. SIGTERM /
// SIGINT: stop taking runs, hand current runs back at a step boundary, exit within the grace.
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { exitOnStartupError } from './startup-errors.ts';
import { writeErr } from '../ops/terminal-text.ts';

interface WorkerFlags {
  config?: string;
  pool?: string;
  slots?: string;
  workerId?: string;
  redisUrl?: string;
  keyPrefix?: string;
  metricsPort?: string;
}

function integer(min: number, max: number) {
  return (value: string): string => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`must be an integer ${min}-${max}.`);
    }
    return value;
  };
}

async function runWorker(flags: WorkerFlags): Promise<void> {
  // Loaded here so other commands do not pay for BullMQ and the engines at start-up.
  const { runWorkerProcess } = await import('@anneal/worker');
  // The worker's own process entry: config errors exit 2, SIGTERM/SIGINT shut down within the
  // grace period and exit 0 once done (a backstop exits 1 past it).
  await runWorkerProcess(
    {
      ...process.env,
      ...(flags.config !== undefined && { ANNEAL_CONFIG: flags.config }),
      ...(flags.pool !== undefined && { ANNEAL_POOL: flags.pool }),
      ...(flags.slots !== undefined && { ANNEAL_SLOTS: flags.slots }),
      ...(flags.workerId !== undefined && { ANNEAL_WORKER_ID: flags.workerId }),
      ...(flags.redisUrl !== undefined && { REDIS_URL: flags.redisUrl }),
      ...(flags.keyPrefix !== undefined && { ANNEAL_KEY_PREFIX: flags.keyPrefix }),
      ...(flags.metricsPort !== undefined && { ANNEAL_METRICS_PORT: flags.metricsPort }),
    },
    {},
    {
      onStartupError: exitOnStartupError, // e.g. Redis unreachable
      onStarted: (worker) =>
        writeErr(
          `anneal: worker ${worker.id} (pool ${worker.pool}) metrics ${worker.metricsUrl}\n`,
        ),
    },
  );
}

export function register(program: Command): void {
  program
    .command('worker')
    .description('Run a worker: consume a pool queue and execute sft | rm | grpo | eval runs')
    .option('--config <file>', 'operator config YAML (default: ANNEAL_CONFIG; none = local mode)')
    .option('--pool <name>', 'pool to serve (default: ANNEAL_POOL or default)')
    .option(
      '--slots <n>',
      'runs held at once (default: ANNEAL_SLOTS or the pool config)',
      integer(1, 1024),
    )
    .option('--worker-id <id>', 'worker id (default: ANNEAL_WORKER_ID or hostname-pid)')
    .option('--redis-url <url>', 'Redis URL (default: REDIS_URL or redis://127.0.0.1:6379)')
    .option('--key-prefix <prefix>', 'Redis key prefix, a {hash-tag} (default: {anneal})')
    .option(
      '--metrics-port <n>',
      '/metrics port (default: ANNEAL_METRICS_PORT or 9464; 0 = any)',
      integer(0, 65535),
    )
    .action((flags: WorkerFlags) => runWorker(flags));
}
