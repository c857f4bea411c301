// Replica state for the failover tests (private servers from @anneal/testing's
// startRedisServer): what INFO replication says, and whether a replica holds all its primary
// has written.
import { Redis } from 'ioredis';

interface Server {
  url: string;
}

/** `INFO replication` as a record (field -> value). */
export async function replicationInfo(url: string): Promise<Record<string, string>> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  try {
    await client.connect();
    const text = await client.info('replication');
    return Object.fromEntries(
      text
        .split(/\r?\n/)
        .filter((line) => line.includes(':'))
        .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]),
    );
  } finally {
    client.disconnect();
  }
}

/**
 * True once the replica holds everything the primary has written: its link is up, no sync is
 * under way, and its offset equals the primary's. Redis 7 syncs a new replica diskless after
 * `repl-diskless-sync-delay` (5 s), and `num-slaves` in Sentinel counts it before that: a test
 * that kills the primary earlier promotes an empty replica.
 */
export async function replicaInSync(primary: Server, replica: Server): Promise<boolean> {
  const [p, r] = await Promise.all([replicationInfo(primary.url), replicationInfo(replica.url)]);
  return (
    r['master_link_status'] === 'up' &&
    r['master_sync_in_progress'] === '0' &&
    p['master_repl_offset'] !== undefined &&
    r['slave_repl_offset'] === p['master_repl_offset']
  );
}

/**
 * With the replica paused: writes filler (keys outside any store prefix) until the primary holds
 * replication data it cannot send any more (two chunks in the replica's output buffer), so that
 * what is written next stays on the primary and dies with it — as when a host fails while its
 * replica is seconds behind. (After a kill -9 on one machine, what the kernel had already
 * buffered for the paused replica still reaches it; this puts the next writes behind that.)
 */
export async function backUpReplication(primary: Server): Promise<void> {
  const client = new Redis(primary.url, { maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  const chunk = 'x'.repeat(4 << 20);
  try {
    for (let i = 0; i < 64; i++) {
      await client.set(`replication-filler:${i}`, chunk);
      const list = String(await client.call('CLIENT', 'LIST', 'TYPE', 'replica'));
      if (Number(/omem=(\d+)/.exec(list)?.[1] ?? 0) >= 2 * chunk.length) return;
    }
    throw new Error(`${primary.url}: replication output did not back up (is the replica paused?)`);
  } finally {
    client.disconnect();
  }
}
