// The bench's Redis: by default a private redis-server on a free port (its INFO counters then
// count only this bench's traffic, not the tests other processes run on a shared server),
// with the append-only file on as in production (docs/architecture.md "Scaling and
// reliability"); or a given URL, where a unique key prefix keeps the bench's keys apart.
import { startRedisServer } from '@anneal/testing';
import type { Redis } from 'ioredis';

export interface BenchRedis {
  url: string;
  /** True when the server serves only this bench (its counters are ours alone). */
  private: boolean;
  close(): Promise<void>;
}

export async function startPrivateRedis(binary: string): Promise<BenchRedis> {
  const server = await startRedisServer({
    binary,
    args: ['--appendonly', 'yes', '--appendfsync', 'everysec', '--maxclients', '10000'],
    readyTimeoutMs: 10_000,
  });
  return { url: server.url, private: true, close: () => server.stop() };
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
