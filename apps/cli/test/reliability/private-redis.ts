// A private redis-server for fault tests (killed and restarted, later a replica and Sentinels):
// its own port and data directory, append-only file fsynced on every write
// (`appendfsync always`), so whatever a client saw acknowledged survives a kill -9.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

/** The redis-server binary on PATH, or null (the tests then say what to install). */
export function redisServerBinary(): string | null {
  const found = spawnSync('which', ['redis-server'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  url: string;
  port: number;
  dir: string;
  /** kill -9: no shutdown save; only the AOF keeps what was written. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (replays the AOF). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPing(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      // LOADING while the AOF replays: wait until it answers PING.
      if ((await client.ping()) === 'PONG') return;
    } catch {
      // not up yet
    } finally {
      client.disconnect();
    }
    if (Date.now() > deadline)
      throw new Error(`redis-server at ${url} not up within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startPrivateRedis(
  binary: string,
  extraArgs: string[] = [],
): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  let output = '';
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--save',
    '',
    ...extraArgs,
  ];
  const start = async () => {
    const c = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    c.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    c.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    child = c;
    await waitForPing(url, 20_000).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${output}`);
    });
  };
  const kill = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url,
    port,
    dir,
    kill,
    start,
    async stop() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
