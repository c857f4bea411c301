// `anneal control-plane` (the API server) and `anneal up` (control plane + one worker with
// embedded engines, for a laptop). Config comes from the environment (ANNEAL_*, REDIS_URL),
// flags override it.
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { ControlPlaneEnv, RunningControlPlane } from '@anneal/control-plane';
import { exitOnStartupError } from './startup-errors.ts';
import { writeErr, writeOut } from '../ops/terminal-text.ts';

/**
 * The control plane app (Fastify and its plugins) is loaded only by the commands that run it,
 * so every other command — e.g. the preStop hook's `anneal workers drain` — starts fast.
 */
const controlPlaneApp = () => import('@anneal/control-plane');

interface ServerFlags {
  config?: string;
  host?: string;
  port?: string;
  redisUrl?: string;
  keyPrefix?: string;
}

function parsePort(value: string): string {
  if (!/^\d+$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError('must be an integer 0-65535.');
  }
  return value;
}

async function envFrom(
  flags: ServerFlags,
  defaults: Record<string, string> = {},
): Promise<ControlPlaneEnv> {
  const { parseEnv } = await controlPlaneApp();
  return parseEnv({
    ...defaults,
    ...process.env,
    ...(flags.config !== undefined && { ANNEAL_CONFIG: flags.config }),
    ...(flags.host !== undefined && { ANNEAL_HOST: flags.host }),
    ...(flags.port !== undefined && { ANNEAL_PORT: flags.port }),
    ...(flags.redisUrl !== undefined && { REDIS_URL: flags.redisUrl }),
    ...(flags.keyPrefix !== undefined && { ANNEAL_KEY_PREFIX: flags.keyPrefix }),
  });
}

function announceLocalToken(plane: RunningControlPlane): void {
  if (plane.localToken?.generated) {
    writeErr(
      `anneal: local mode; operator token (shown once): ${plane.localToken.token}\n` +
        `anneal: export ANNEAL_TOKEN=${plane.localToken.token} ANNEAL_URL=${plane.url}\n`,
    );
  }
}

/** Resolves on SIGINT/SIGTERM after `close` finished. */
function closeOnSignal(close: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let closing = false;
    const onSignal = () => {
      if (closing) return;
      closing = true;
      close()
        .catch((error: unknown) => writeErr(`anneal: shutdown error: ${String(error)}\n`))
        .finally(resolve);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
}

interface WorkerModule {
  startWorker(
    config: unknown,
    options?: { logger?: unknown },
  ): Promise<{ id: string; close(): Promise<void> }>;
  loadWorkerConfig(env: Record<string, string | undefined>): unknown;
}

/** The worker app, if it provides `startWorker` (it is optional for `up`). */
async function loadWorkerModule(): Promise<WorkerModule | null> {
  try {
    // A computed specifier: `up` treats the worker as optional and only relies on the two
    // functions above, so the CLI does not type-check against the worker's internals.
    const specifier: string = '@anneal/worker';
    const mod = (await import(specifier)) as Partial<WorkerModule>;
    if (typeof mod.startWorker === 'function' && typeof mod.loadWorkerConfig === 'function') {
      return mod as WorkerModule;
    }
    return null;
  } catch (error) {
    writeErr(`anneal: worker unavailable (${(error as Error).message})\n`);
    return null;
  }
}

async function runControlPlane(flags: ServerFlags): Promise<void> {
  const env = await envFrom(flags);
  const { startControlPlane } = await controlPlaneApp();
  const plane = await startControlPlane({ env, secretEnv: process.env });
  announceLocalToken(plane);
  writeErr(`anneal: control plane listening on ${plane.url}\n`);
  await closeOnSignal(() => plane.close());
}

async function runUp(flags: ServerFlags & { worker: boolean }): Promise<void> {
  // Logs go to stderr: stdout carries exactly one line, `ready <url>`.
  const env = await envFrom(flags, { ANNEAL_LOG_LEVEL: 'warn' });
  const { startControlPlane } = await controlPlaneApp();
  // Loaded here, not at the top: `anneal --help` must not pay for pino and prom-client.
  const { createLogger } = await import('@anneal/telemetry');
  const logger = createLogger({
    name: 'control-plane',
    level: env.ANNEAL_LOG_LEVEL,
    destination: process.stderr,
  });
  const plane = await startControlPlane({ env, logger, secretEnv: process.env });
  announceLocalToken(plane);
  let worker: { id: string; close(): Promise<void> } | null = null;
  const workerModule = flags.worker ? await loadWorkerModule() : null;
  if (workerModule) {
    try {
      const config = workerModule.loadWorkerConfig({
        ANNEAL_METRICS_PORT: '0',
        ...process.env,
        REDIS_URL: env.REDIS_URL,
        ANNEAL_KEY_PREFIX: env.ANNEAL_KEY_PREFIX,
        // the root the control plane reads rollouts and eval items from
        ANNEAL_ARTIFACT_DIR: env.ANNEAL_ARTIFACT_DIR,
        ...(env.ANNEAL_CONFIG !== undefined && { ANNEAL_CONFIG: env.ANNEAL_CONFIG }),
        ANNEAL_LOG_LEVEL: env.ANNEAL_LOG_LEVEL,
      });
      const workerLogger = createLogger({
        name: 'worker',
        level: env.ANNEAL_LOG_LEVEL,
        destination: process.stderr,
      });
      worker = await workerModule.startWorker(config, { logger: workerLogger });
    } catch (error) {
      await plane.close();
      throw error;
    }
  }
  writeOut(`ready ${plane.url}\n`);
  await closeOnSignal(async () => {
    await worker?.close();
    await plane.close();
  });
}

export function register(program: Command): void {
  const serverOptions = (command: Command) =>
    command
      .option('--config <file>', 'operator config YAML (default: ANNEAL_CONFIG; none = local mode)')
      .option('--host <host>', 'interface to listen on (default: ANNEAL_HOST or 127.0.0.1)')
      .option('--port <n>', 'port (default: ANNEAL_PORT or 8080; 0 = any free port)', parsePort)
      .option('--redis-url <url>', 'Redis URL (default: REDIS_URL or redis://127.0.0.1:6379)')
      .option('--key-prefix <prefix>', 'Redis key prefix, a {hash-tag} (default: {anneal})');

  serverOptions(
    program.command('control-plane').description('Run the control plane (REST API)'),
  ).action((flags: ServerFlags) => runControlPlane(flags).catch(exitOnStartupError));

  serverOptions(
    program
      .command('up')
      .description(
        'Local stack: control plane + one worker with embedded engines; prints `ready <url>`',
      ),
  )
    .option('--no-worker', 'start only the control plane')
    .action((flags: ServerFlags & { worker: boolean }) => runUp(flags).catch(exitOnStartupError));
}
