// `anneal sweeps ls|get|cancel|pause|resume`: the sweep routes (docs/api.md "Sweeps"); a sweep
// is submitted with `anneal submit sweep.yaml` (commands/runs.ts tells a sweep document apart).
import type { Command } from 'commander';
import type { SweepList, SweepResource } from '@anneal/protocol';
import { type ApiClient, clientFromEnv, formatApiError } from '../api/client.ts';
import { table } from '../ops/output.ts';
import { safeJson, writeErr, writeOut } from '../ops/terminal-text.ts';
import { sweepText } from './compare-format.ts';

async function withClient(action: (client: ApiClient) => Promise<void>): Promise<void> {
  try {
    await action(clientFromEnv(process.env));
  } catch (error) {
    writeErr(`${formatApiError(error)}\n`);
    process.exitCode = 1;
  }
}

const sweepPath = (id: string) => `/v1/sweeps/${encodeURIComponent(id)}`;

const counted = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');

export function register(program: Command): void {
  const sweeps = program
    .command('sweeps')
    .description('List and inspect sweeps; cancel, pause or resume all their runs');

  sweeps
    .command('ls')
    .description('List sweeps of your tenant, newest first')
    .option('--limit <n>', 'page size (1-200)', '50')
    .option('--json', 'print the raw page as JSON')
    .action(async (options: { limit: string; json?: boolean }) => {
      await withClient(async (client) => {
        const { body } = await client.request<SweepList>(
          'GET',
          `/v1/sweeps?${new URLSearchParams({ limit: options.limit })}`,
        );
        if (options.json) {
          writeOut(`${safeJson(body, 2)}\n`);
          return;
        }
        const rows = body.sweeps.map((s) => [
          s.id,
          s.name ?? '-',
          s.kind,
          String(s.runCount),
          counted(s.counts) || '-',
          s.createdAt,
        ]);
        writeOut(`${table([['ID', 'NAME', 'KIND', 'RUNS', 'STATES', 'CREATED'], ...rows])}\n`);
      });
    });

  sweeps
    .command('get')
    .description("Show a sweep: its runs' states and grid values, the best run by its metric")
    .argument('<id>', 'sweep id')
    .option('--json', 'print the sweep as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      await withClient(async (client) => {
        const { body } = await client.request<SweepResource>('GET', sweepPath(id));
        writeOut(options.json ? `${safeJson(body, 2)}\n` : sweepText(body));
      });
    });

  const actions = {
    cancel: 'Cancel every run of the sweep that has not ended',
    pause: 'Pause every run of the sweep that has not ended',
    resume: 'Resume every paused run of the sweep',
  } as const;
  for (const [action, description] of Object.entries(actions)) {
    sweeps
      .command(action)
      .description(description)
      .argument('<id>', 'sweep id')
      .option('--reason <text>', 'recorded in each run history')
      .action(async (id: string, options: { reason?: string }) => {
        await withClient(async (client) => {
          const { body } = await client.request<SweepResource>(
            'POST',
            `${sweepPath(id)}/${action}`,
            { body: JSON.stringify(options.reason ? { reason: options.reason } : {}) },
          );
          writeOut(`${body.id}: ${counted(body.counts) || 'no runs'}\n`);
        });
      });
  }
}
