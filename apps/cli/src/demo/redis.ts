// Finds a Redis for the demo, the same way scripts/redis.mjs does for `npm run demo`: REDIS_URL,
// else a Redis listening on 127.0.0.1:6379, else a throwaway `redis-server` from PATH on a free
// port (no persistence), stopped by `stop()`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import net from 'node:net';

export const NO_REDIS_HELP =
  'No Redis found: set REDIS_URL, or install one (apt-get install -y redis-server | brew install redis | docker compose up -d redis).';

export interface DemoRedis {
  url: string;
  /** Where it came from, for the start-up line. */
  source: string;
  /** Stops a redis-server this module started; a no-op otherwise. */
  stop(): Promise<void>;
}

function canConnect(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function listening(port: number, deadlineMs: number): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (await canConnect(port)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export async function ensureRedis(
  env: Readonly<Record<string, string | undefined>>,
): Promise<DemoRedis> {
  if (env.REDIS_URL) {
    return { url: env.REDIS_URL, source: 'REDIS_URL', stop: async () => {} };
  }
  if (await canConnect(6379)) {
    const url = 'redis://127.0.0.1:6379';
    return { url, source: 'local redis on 6379', stop: async () => {} };
  }
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) throw new Error(NO_REDIS_HELP);
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const kill = () => child.kill('SIGTERM');
  process.once('exit', kill);
  if (!(await listening(port, 10_000))) {
    await stopChild(child);
    throw new Error(`redis-server did not start listening on port ${port}`);
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    source: `redis-server started on port ${port}`,
    async stop() {
      process.off('exit', kill);
      await stopChild(child);
    },
  };
}
