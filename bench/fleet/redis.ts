// The bench's Redis: by default a private redis-server on a free port (its INFO counters then
// count only this bench's traffic, not the tests other processes run on a shared server),
// with the append-only file on as in production (docs/architecture.md "Scaling and
// reliability"); or a given URL, where a unique key prefix keeps the bench's keys apart.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

export interface BenchRedis {
  url: string;
  /** True when the server serves only this bench (its counters are ours alone). */
  private: boolean;
  close(): Promise<void>;
}

function freePort(): Promise<number> {
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

async function waitForPing(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const client = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      client.disconnect();
    }
  }
  throw new Error(`redis-server at ${url} did not answer PING within 10 s`);
}

export async function startPrivateRedis(binary: string): Promise<BenchRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-fleet-redis-'));
  const port = await freePort();
  const child = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--maxclients',
      '10000',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const url = `redis://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A bench that dies without cleaning up must not leave its server behind.
  const orphan = () => child.kill('SIGKILL');
  process.once('exit', orphan);
  await waitForPing(url, child);
  return {
    url,
    private: true,
    async close() {
      process.off('exit', orphan);
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export function sharedRedis(url: string): BenchRedis {
  return { url, private: false, close: async () => undefined };
}

/** Cumulative server counters at one moment. */
export interface RedisCounters {
  atMs: number;
  /** Commands by name (INFO commandstats calls; those inside Lua scripts included). */
  byCommand: Record<string, number>;
  /** Redis CPU seconds (user + sys). */
  cpuSeconds: number;
}

function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

export async function readCounters(client: Redis): Promise<RedisCounters> {
  const atMs = Date.now();
  const fields = infoFields(await client.info('all'));
  const byCommand: Record<string, number> = {};
  for (const [key, value] of fields) {
    if (!key.startsWith('cmdstat_')) continue;
    const calls = /calls=(\d+)/.exec(value);
    byCommand[key.slice('cmdstat_'.length)] = Number(calls?.[1] ?? 0);
  }
  return {
    atMs,
    byCommand,
    cpuSeconds: Number(fields.get('used_cpu_user') ?? 0) + Number(fields.get('used_cpu_sys') ?? 0),
  };
}

/** What happened between two readings (the readings' own INFO calls excluded). */
export interface RedisLoad {
  seconds: number;
  commands: number;
  scripts: number;
  cpuSeconds: number;
  byCommand: Record<string, number>;
}

export function loadBetween(before: RedisCounters, after: RedisCounters): RedisLoad {
  const byCommand: Record<string, number> = {};
  for (const [name, calls] of Object.entries(after.byCommand)) {
    const delta = calls - (before.byCommand[name] ?? 0) - (name === 'info' ? 1 : 0);
    if (delta > 0) byCommand[name] = delta;
  }
  return {
    seconds: (after.atMs - before.atMs) / 1000,
    commands: Object.values(byCommand).reduce((a, b) => a + b, 0),
    scripts: (byCommand.evalsha ?? 0) + (byCommand.eval ?? 0),
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    byCommand,
  };
}
