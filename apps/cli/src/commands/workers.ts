// `anneal workers ls` (GET /v1/workers) and `anneal workers drain ID` (POST
// /v1/workers/{id}/drain). The Kubernetes preStop hook runs `anneal workers drain
// "$ANNEAL_WORKER_ID"` with ANNEAL_URL and ANNEAL_TOKEN (an operator token) in the environment.
import type { Command } from 'commander';
import type { WorkerRecord } from '@anneal/protocol';
import { ageOf, formatAge, printJson, table, withApi } from '../ops/output.ts';
import { writeOut } from '../ops/terminal-text.ts';

const HEADER = ['ID', 'POOL', 'STATUS', 'SLOTS', 'RUNS', 'HEARTBEAT', 'UP', 'VERSION'];

export function workerStatus(worker: WorkerRecord): string {
  if (!worker.draining) return 'online';
  return worker.checkpointAndRelease ? 'draining (release)' : 'draining';
}

export function workerRow(worker: WorkerRecord, now: Date = new Date()): string[] {
  return [
    worker.id,
    worker.pool,
    workerStatus(worker),
    `${worker.busy}/${worker.slots}`,
    worker.runs.length === 0 ? '-' : worker.runs.join(','),
    `${formatAge(ageOf(worker.lastHeartbeat, now))} ago`,
    formatAge(ageOf(worker.startedAt, now)),
    worker.version ?? '-',
  ];
}

export function register(program: Command): void {
  const workers = program.command('workers').description('List and drain workers');

  workers
    .command('ls')
    .description('Live workers (fresh heartbeat): pool, drain status, slots busy/total, runs')
    .option('--pool <name>', 'only workers of this pool')
    .option('--json', 'print the raw response as JSON')
    .action(async (options: { pool?: string; json?: boolean }) => {
      await withApi(async (client) => {
        const { body } = await client.request<{ workers: WorkerRecord[] }>('GET', '/v1/workers');
        const shown = body.workers.filter((w) => !options.pool || w.pool === options.pool);
        if (options.json) return printJson({ workers: shown });
        const now = new Date();
        writeOut(`${table([HEADER, ...shown.map((w) => workerRow(w, now))])}\n`);
      });
    });

  workers
    .command('drain')
    .description(
      'Stop a worker taking new runs; its current runs finish (or, with ' +
        '--checkpoint-and-release, checkpoint and go back to the queue for another worker)',
    )
    .argument('<id>', 'worker id (see `anneal workers ls`)')
    .option('--checkpoint-and-release', 'checkpoint current runs and requeue them')
    .option('--json', 'print the updated worker as JSON')
    .action(
      async (
        id: string,
        options: { checkpointAndRelease?: boolean; json?: boolean },
        command: Command,
      ) => {
        if (id.trim() === '') {
          // e.g. an unset $ANNEAL_WORKER_ID in a preStop hook
          return command.error('error: worker id is empty', { exitCode: 2 });
        }
        await withApi(async (client) => {
          const release = options.checkpointAndRelease === true;
          const { body } = await client.request<WorkerRecord>(
            'POST',
            `/v1/workers/${encodeURIComponent(id)}/drain`,
            { body: JSON.stringify({ checkpointAndRelease: release }) },
          );
          if (options.json) return printJson(body);
          const held = body.runs.length === 0 ? 'no runs' : body.runs.join(', ');
          const what = release
            ? 'its runs checkpoint and return to the queue'
            : 'its runs finish first';
          writeOut(`draining ${body.id} (${held}; ${what})\n`);
        });
      },
    );
}
