// `anneal pools ls`: per pool, workers online/busy/draining, slots, queue depth by state and the
// age of the oldest waiting run (GET /v1/pools).
import type { Command } from 'commander';
import type { PoolStatus } from '@anneal/protocol';
import { formatAge, printJson, table, withApi } from '../ops/output.ts';
import { writeOut } from '../ops/terminal-text.ts';

const HEADER = [
  'POOL',
  'ONLINE',
  'BUSY',
  'DRAINING',
  'SLOTS',
  'WAITING',
  'PRIORITIZED',
  'DELAYED',
  'ACTIVE',
  'FAILED',
  'OLDEST WAIT',
];

export function poolRow(pool: PoolStatus): string[] {
  return [
    pool.name,
    String(pool.workers.online),
    String(pool.workers.busy),
    String(pool.workers.draining),
    `${pool.slots.busy}/${pool.slots.total}`,
    String(pool.queue.waiting),
    String(pool.queue.prioritized),
    String(pool.queue.delayed),
    String(pool.queue.active),
    String(pool.queue.failed),
    formatAge(pool.oldestWaitingAgeSeconds),
  ];
}

export function register(program: Command): void {
  const pools = program.command('pools').description('Inspect worker pools');
  pools
    .command('ls')
    .description(
      'Pools: workers online/busy/draining, slots busy/total, queue depth by state, oldest wait',
    )
    .option('--json', 'print the raw response as JSON')
    .action(async (options: { json?: boolean }) => {
      await withApi(async (client) => {
        const { body } = await client.request<{ pools: PoolStatus[] }>('GET', '/v1/pools');
        if (options.json) return printJson(body);
        writeOut(`${table([HEADER, ...body.pools.map(poolRow)])}\n`);
      });
    });
}
