// `anneal runs checkpoints ID [--status S] [--from N] [--to N] [--page N] [--json]`: the run's
// checkpoint catalogue (GET /v1/runs/{id}/checkpoints, docs/checkpoints.md), read a page at a time
// and written as each page arrives: step, kept or deleted, the resume point, the step's headline
// metric, protections and the runs that start from it; then the catalogue's summary.
import { type Command, InvalidArgumentError } from 'commander';
import type { CheckpointEntry, CheckpointList } from '@anneal/protocol';
import { type ApiClient, clientFromEnv, formatApiError } from '../api/client.ts';
import { safeJson, writeErr, writeOut } from '../ops/terminal-text.ts';

/** The metric a catalogue row shows: GRPO's reward, else the training loss. */
const HEADLINE = ['reward/all', 'loss'] as const;

export interface CatalogueQuery {
  status: 'kept' | 'deleted' | 'all';
  from?: number;
  to?: number;
  /** Entries per request (1–200). */
  page: number;
}

/** Every page of the catalogue the query selects, one request each, oldest first. */
export async function* cataloguePages(
  client: ApiClient,
  runId: string,
  query: CatalogueQuery,
): AsyncGenerator<CheckpointList> {
  let cursor: string | null = null;
  do {
    const params = new URLSearchParams({ status: query.status, limit: String(query.page) });
    if (query.from !== undefined) params.set('from', String(query.from));
    if (query.to !== undefined) params.set('to', String(query.to));
    if (cursor !== null) params.set('cursor', cursor);
    const { body }: { body: CheckpointList } = await client.request<CheckpointList>(
      'GET',
      `/v1/runs/${encodeURIComponent(runId)}/checkpoints?${params}`,
    );
    yield body;
    cursor = body.nextCursor;
  } while (cursor !== null);
}

/** Fixed column widths, so pages written one after another line up. */
const WIDTHS = [8, 14, 24, 11, 12] as const;

function line(cells: readonly string[]): string {
  return cells
    .map((cell, i) => (i < WIDTHS.length ? cell.padEnd(WIDTHS[i] ?? 0) : cell))
    .join('  ')
    .trimEnd();
}

/** The metric the table shows, chosen from the first page. */
export function headlineOf(entries: readonly CheckpointEntry[]): string | undefined {
  return HEADLINE.find((m) => entries.some((c) => c.metrics?.[m] != null));
}

export function headerLine(metric: string | undefined): string {
  return line(['STEP', 'STATUS', 'AT', (metric ?? 'METRIC').toUpperCase(), 'PROTECTED', 'USED BY']);
}

export function entryLines(
  entries: readonly CheckpointEntry[],
  metric: string | undefined,
): string {
  return entries
    .map((c) => {
      const value = metric === undefined ? null : c.metrics?.[metric];
      return `${line([
        String(c.step),
        c.status + (c.latest ? ' (latest)' : ''),
        c.at,
        value == null ? '-' : value.toFixed(4),
        c.protections.map((p) => p.owner).join(',') || '-',
        c.usedBy.join(',') || '-',
      ])}\n`;
    })
    .join('');
}

/** The lines after the rows: the whole catalogue's counts and the retention. */
export function summaryLines(list: CheckpointList): string {
  const { kept, deleted, latest } = list.summary;
  const range =
    deleted.count === 0
      ? ''
      : ` (steps ${deleted.firstStep}–${deleted.lastStep}; --status deleted)`;
  const retention =
    Object.keys(list.retention).length === 0 ? 'keep all' : JSON.stringify(list.retention);
  return (
    `${kept} kept, ${deleted.count} deleted${range}; resume point: ${latest ?? 'none'}\n` +
    `retention: ${retention}\n`
  );
}

/** Writes the table page by page; returns how many rows it wrote. */
export async function writeTable(
  pages: AsyncIterable<CheckpointList>,
  write: (text: string) => void,
  status: CatalogueQuery['status'] = 'kept',
): Promise<number> {
  let rows = 0;
  let metric: string | undefined;
  let last: CheckpointList | undefined;
  for await (const page of pages) {
    if (rows === 0 && page.checkpoints.length > 0) {
      metric = headlineOf(page.checkpoints);
      write(`${headerLine(metric)}\n`);
    }
    write(entryLines(page.checkpoints, metric));
    rows += page.checkpoints.length;
    last = page;
  }
  if (!last) return rows;
  if (rows === 0) {
    write(`run ${last.runId} has no ${status === 'all' ? '' : `${status} `}checkpoints\n`);
  }
  write(`${rows === 0 ? '' : '\n'}${summaryLines(last)}`);
  return rows;
}

/** Writes `{runId, retention, summary, checkpoints: [...]}` with the entries as they arrive. */
export async function writeJson(
  pages: AsyncIterable<CheckpointList>,
  write: (text: string) => void,
): Promise<void> {
  let last: CheckpointList | undefined;
  let first = true;
  write('{"checkpoints":[');
  for await (const page of pages) {
    for (const c of page.checkpoints) {
      write(`${first ? '\n' : ',\n'}${safeJson(c)}`);
      first = false;
    }
    last = page;
  }
  const rest = last && { runId: last.runId, retention: last.retention, summary: last.summary };
  write(`\n],${safeJson(rest ?? {}).slice(1)}\n`);
}

const integer = (value: string) => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number.');
  return Number(value);
};

export function registerCheckpoints(runs: Command): void {
  runs
    .command('checkpoints')
    .description('List the checkpoints a run recorded: kept or deleted, metrics, forks using them')
    .argument('<id>', 'run id')
    .option('--status <status>', 'kept, deleted or all', 'kept')
    .option('--from <step>', 'steps from this one', integer)
    .option('--to <step>', 'steps up to this one', integer)
    .option('--page <n>', 'entries per request (1-200)', integer, 100)
    .option('--json', 'print the catalogue as JSON')
    .action(
      async (
        id: string,
        options: { status: string; from?: number; to?: number; page: number; json?: boolean },
      ) => {
        try {
          if (!['kept', 'deleted', 'all'].includes(options.status)) {
            throw new Error(`--status must be kept, deleted or all, got '${options.status}'`);
          }
          const status = options.status as CatalogueQuery['status'];
          const pages = cataloguePages(clientFromEnv(process.env), id, {
            status,
            page: options.page,
            ...(options.from !== undefined && { from: options.from }),
            ...(options.to !== undefined && { to: options.to }),
          });
          // server text (names, reasons) reaches the terminal escaped (ops/terminal-text.ts); the
          // JSON carries it as JSON escapes
          if (options.json) await writeJson(pages, (text) => void process.stdout.write(text));
          else await writeTable(pages, (text) => void writeOut(text), status);
        } catch (error) {
          writeErr(`${formatApiError(error)}\n`);
          process.exitCode = 1;
        }
      },
    );
}
