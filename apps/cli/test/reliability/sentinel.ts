// Three Redis Sentinels on loopback watching a private primary (reliability/private-redis.ts):
// `redis-sentinel` where installed (Debian package), else `redis-server --sentinel` — the same
// binary in sentinel mode. Quorum 2, primary marked down after 1 s.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '@anneal/testing';

export const PRIMARY_NAME = 'anneal-primary';

export interface Sentinels {
  ports: number[];
  /** redis+sentinel://127.0.0.1:p1,…/anneal-primary */
  url: string;
  /** host:port of the primary as the sentinels see it now. */
  primary(): Promise<string | null>;
  stop(): Promise<void>;
}

function command(binary: string): { cmd: string; args: string[] } {
  const sentinel = spawnSync('which', ['redis-sentinel'], { encoding: 'utf8' });
  return sentinel.status === 0
    ? { cmd: sentinel.stdout.trim(), args: [] }
    : { cmd: binary, args: ['--sentinel'] };
}

export async function startSentinels(
  redisServer: string,
  primaryPort: number,
  dir: string,
): Promise<Sentinels> {
  const { cmd, args } = command(redisServer);
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = path.join(dir, `sentinel-${i}.conf`);
    await writeFile(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${PRIMARY_NAME} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${PRIMARY_NAME} 1000`,
        `sentinel failover-timeout ${PRIMARY_NAME} 10000`,
        `sentinel parallel-syncs ${PRIMARY_NAME} 1`,
        '',
      ].join('\n'),
    );
    children.push(spawn(cmd, [conf, ...args], { stdio: 'ignore' }));
    ports.push(port);
  }
  const ask = new Redis({ port: ports[0]!, host: '127.0.0.1', lazyConnect: true });
  ask.on('error', () => {});
  return {
    ports,
    url: `redis+sentinel://${ports.map((p) => `127.0.0.1:${p}`).join(',')}/${PRIMARY_NAME}`,
    async primary() {
      try {
        const reply = (await ask.call('SENTINEL', 'get-master-addr-by-name', PRIMARY_NAME)) as
          [string, string] | null;
        return reply ? `${reply[0]}:${reply[1]}` : null;
      } catch {
        return null;
      }
    },
    async stop() {
      ask.disconnect();
      await Promise.all(
        children.map(async (c) => {
          if (c.exitCode !== null || c.signalCode !== null) return;
          const exited = new Promise((resolve) => c.once('exit', resolve));
          c.kill('SIGKILL');
          await exited;
        }),
      );
    },
  };
}
