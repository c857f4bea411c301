// `anneal runs checkpoints ID [--json]`: the run's checkpoint catalogue
// (GET /v1/runs/{id}/checkpoints, docs/checkpoints.md): step, kept or deleted, the resume point,
// the step's headline metric, protections and the runs that start from it.
import type { Command } from 'commander';
import type { CheckpointList } from '@anneal/protocol';
import { clientFromEnv, formatApiError } from '../api/client.ts';
import { table } from '../ops/output.ts';
import { safeJson, writeErr, writeOut } from '../ops/terminal-text.ts';

/** The metric a catalogue row shows: GRPO's reward, else the training loss. */
const HEADLINE = ['reward/all', 'loss'] as const;

export function checkpointsTable(list: CheckpointList): string {
  if (list.checkpoints.length === 0) return `run ${list.runId} has no checkpoints\n`;
  const metric = HEADLINE.find((m) => list.checkpoints.some((c) => c.metrics?.[m] != null));
  const rows = list.checkpoints.map((c) => {
    const value = metric === undefined ? null : c.metrics?.[metric];
    return [
      String(c.step),
      c.status + (c.latest ? ' (latest)' : ''),
      c.at,
      value == null ? '-' : value.toFixed(4),
      c.protections.map((p) => p.owner).join(',') || '-',
      c.usedBy.join(',') || '-',
    ];
  });
  const retention =
    Object.keys(list.retention).length === 0 ? 'keep all' : JSON.stringify(list.retention);
  return (
    table([
      ['STEP', 'STATUS', 'AT', (metric ?? 'METRIC').toUpperCase(), 'PROTECTED', 'USED BY'],
      ...rows,
    ]) + `\nretention: ${retention}\n`
  );
}

export function registerCheckpoints(runs: Command): void {
  runs
    .command('checkpoints')
    .description('List the checkpoints a run recorded: kept or deleted, metrics, forks using them')
    .argument('<id>', 'run id')
    .option('--json', 'print the raw catalogue as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      try {
        const { body } = await clientFromEnv(process.env).request<CheckpointList>(
          'GET',
          `/v1/runs/${id}/checkpoints`,
        );
        writeOut(options.json ? `${safeJson(body, 2)}\n` : checkpointsTable(body));
      } catch (error) {
        writeErr(`${formatApiError(error)}\n`);
        process.exitCode = 1;
      }
    });
}
