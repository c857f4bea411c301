// `anneal runs results ID [--format table|json|csv]` and `anneal runs compare ID… | --sweep ID`:
// an eval run's budget-forced results (GET /v1/runs/{id}/results, docs/recipe.md §8) as a table
// per checkpoint × budget, and runs of one kind side by side (GET /v1/runs/compare: the spec
// fields that differ, final metrics; two evals also get accuracy and cost deltas per budget).
import type { Command } from 'commander';
import type { EvalCell, EvalResults, RunComparison, SweepResource } from '@anneal/protocol';
import { type ApiClient, clientFromEnv, formatApiError } from '../api/client.ts';
import { table } from '../ops/output.ts';
import { safeJson, writeErr, writeOut } from '../ops/terminal-text.ts';
import { comparisonText } from './compare-format.ts';

export const RESULT_FORMATS = ['table', 'json', 'csv'] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

const pct = (v: number | null): string => (v === null ? '-' : `${(v * 100).toFixed(1)}%`);
const num = (v: number | null, digits = 2): string => (v === null ? '-' : v.toFixed(digits));
const cents = (v: number | null): string => (v === null ? '-' : `${(v * 100).toFixed(3)}¢`);
const signed = (v: number, unit: (x: number) => string): string =>
  `${v > 0 ? '+' : v < 0 ? '−' : '±'}${unit(Math.abs(v))}`;

type Prices = EvalResults['checkpoints'][number]['prices'];

/** A checkpoint's price table in one phrase; '' when it is all zero (cost not reported). */
export function pricesPhrase(p: Prices): string {
  if (p.promptPerMillionTokens === 0 && p.completionPerMillionTokens === 0 && p.perToolCall === 0) {
    return '';
  }
  return (
    `; priced at $${p.promptPerMillionTokens}/1M prompt tok, ` +
    `$${p.completionPerMillionTokens}/1M compl tok, ${cents(p.perToolCall)}/tool call`
  );
}

const HEADER = [
  'checkpoint',
  'b',
  'n',
  'accuracy',
  '95% interval',
  'tool calls',
  'broken',
  'abstain',
  'false abstain',
  'lang mismatch',
  'pref win',
  'prompt tok',
  'compl tok',
  'cost/query',
];

function cellRow(label: string, c: EvalCell): string[] {
  return [
    label,
    String(c.budget),
    String(c.n),
    pct(c.accuracy),
    c.accuracyLow === null || c.accuracyHigh === null
      ? '-'
      : `${pct(c.accuracyLow)}–${pct(c.accuracyHigh)}`,
    num(c.meanToolCalls),
    pct(c.brokenToolCallRate),
    pct(c.abstention),
    pct(c.falseAbstention),
    pct(c.languageMismatch),
    pct(c.preferenceWinRate),
    num(c.promptTokens, 0),
    num(c.completionTokens, 0),
    cents(c.costPerQueryUsd),
  ];
}

/** One row per checkpoint × budget, then each checkpoint's knee and the frontier. */
export function resultsTable(r: EvalResults): string {
  const rows = [HEADER, ...r.checkpoints.flatMap((c) => c.cells.map((x) => cellRow(c.label, x)))];
  const lines = [
    `eval ${r.runId} (${r.state}${r.complete ? '' : ', incomplete'}) on ${r.datasets.join(', ')}`,
    table(rows),
    '',
    ...r.checkpoints.map(
      (c) =>
        `${c.label}: best ${pct(c.bestAccuracy)}, knee at b = ${c.knee ?? '-'} (smallest budget within 1 point of the best)${pricesPhrase(c.prices)}`,
    ),
  ];
  if (r.frontier.length > 0) {
    lines.push(
      `cost–accuracy frontier: ${r.frontier
        .map((p) => `${p.label} b=${p.budget} ${pct(p.accuracy)} at ${cents(p.costPerQueryUsd)}`)
        .join(' → ')}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

const CSV_HEADER = [
  'checkpoint',
  'label',
  'budget',
  'n',
  'accuracy',
  'accuracy_low',
  'accuracy_high',
  'mean_tool_calls',
  'broken_tool_call_rate',
  'abstention',
  'false_abstention',
  'language_mismatch',
  'preference_win_rate',
  'prompt_tokens',
  'completion_tokens',
  'cost_per_query_usd',
];

const csvField = (v: string | number | null): string => {
  if (v === null) return '';
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** RFC 4180 CSV, one line per checkpoint × budget; empty fields for null. */
export function resultsCsv(r: EvalResults): string {
  const lines = r.checkpoints.flatMap((c) =>
    c.cells.map((x) =>
      [
        c.index,
        c.label,
        x.budget,
        x.n,
        x.accuracy,
        x.accuracyLow,
        x.accuracyHigh,
        x.meanToolCalls,
        x.brokenToolCallRate,
        x.abstention,
        x.falseAbstention,
        x.languageMismatch,
        x.preferenceWinRate,
        x.promptTokens,
        x.completionTokens,
        x.costPerQueryUsd,
      ]
        .map(csvField)
        .join(','),
    ),
  );
  return `${[CSV_HEADER.join(','), ...lines].join('\r\n')}\r\n`;
}

/**
 * Two evals side by side: for each checkpoint position and budget both evaluated, accuracy and
 * cost of A and B and B − A. Checkpoints pair by position (the first of A with the first of B).
 */
export function compareTable(a: EvalResults, b: EvalResults): string {
  const rows = [
    [
      'checkpoint (A / B)',
      'b',
      'accuracy A',
      'accuracy B',
      'Δ accuracy',
      'cost A',
      'cost B',
      'Δ cost',
    ],
  ];
  const pairs = Math.min(a.checkpoints.length, b.checkpoints.length);
  for (let i = 0; i < pairs; i++) {
    const ca = a.checkpoints[i]!;
    const cb = b.checkpoints[i]!;
    for (const x of ca.cells) {
      const y = cb.cells.find((c) => c.budget === x.budget);
      if (y === undefined) continue;
      const dAcc = x.accuracy !== null && y.accuracy !== null ? y.accuracy - x.accuracy : null;
      const dCost =
        x.costPerQueryUsd !== null && y.costPerQueryUsd !== null
          ? y.costPerQueryUsd - x.costPerQueryUsd
          : null;
      rows.push([
        `${ca.label} / ${cb.label}`,
        String(x.budget),
        pct(x.accuracy),
        pct(y.accuracy),
        dAcc === null ? '-' : signed(dAcc * 100, (v) => `${v.toFixed(1)} pts`),
        cents(x.costPerQueryUsd),
        cents(y.costPerQueryUsd),
        dCost === null ? '-' : signed(dCost, cents),
      ]);
    }
  }
  const knees = Array.from({ length: pairs }, (_, i) => {
    const ca = a.checkpoints[i]!;
    const cb = b.checkpoints[i]!;
    return `${ca.label} / ${cb.label}: knee b = ${ca.knee ?? '-'} / ${cb.knee ?? '-'}, best ${pct(ca.bestAccuracy)} / ${pct(cb.bestAccuracy)}`;
  });
  const head = `A = ${a.runId} (${a.datasets.join(', ')}), B = ${b.runId} (${b.datasets.join(', ')})`;
  const note =
    a.checkpoints.length === b.checkpoints.length
      ? []
      : [
          `(A has ${a.checkpoints.length} checkpoints, B ${b.checkpoints.length}; the first ${pairs} are compared)`,
        ];
  return `${[head, table(rows), '', ...knees, ...note].join('\n')}\n`;
}

async function fetchResults(client: ApiClient, id: string): Promise<EvalResults> {
  const { body } = await client.request<EvalResults>(
    'GET',
    `/v1/runs/${encodeURIComponent(id)}/results`,
  );
  return body;
}

async function withClient(action: (client: ApiClient) => Promise<void>): Promise<void> {
  try {
    await action(clientFromEnv(process.env));
  } catch (error) {
    writeErr(`${formatApiError(error)}\n`);
    process.exitCode = 1;
  }
}

export function registerResults(runs: Command): void {
  runs
    .command('results')
    .description(
      'Eval results: accuracy (95% interval), tool calls and cost per checkpoint and budget',
    )
    .argument('<id>', 'eval run id')
    .option('--format <format>', `output format: ${RESULT_FORMATS.join(', ')}`, 'table')
    .action(async (id: string, options: { format: string }, command: Command) => {
      if (!(RESULT_FORMATS as readonly string[]).includes(options.format)) {
        return command.error(
          `error: --format: must be one of ${RESULT_FORMATS.join(', ')}, got '${options.format}'`,
          { exitCode: 2 },
        );
      }
      await withClient(async (client) => {
        const results = await fetchResults(client, id);
        const format = options.format as ResultFormat;
        writeOut(
          format === 'json'
            ? `${safeJson(results, 2)}\n`
            : format === 'csv'
              ? resultsCsv(results)
              : resultsTable(results),
        );
      });
    });

  runs
    .command('compare')
    .description(
      'Runs of one kind side by side: the spec fields that differ and final metrics ' +
        '(two eval runs: also accuracy and cost per budget, with deltas B − A)',
    )
    .argument('[ids...]', 'run ids (two or more)')
    .option('--sweep <id>', "compare a sweep's runs")
    .option(
      '--metric <name>',
      'final metrics to show (repeatable; default: every one)',
      collect,
      [],
    )
    .option('--json', 'print the comparison as JSON')
    .action(
      async (
        ids: string[],
        options: { sweep?: string; metric: string[]; json?: boolean },
        command: Command,
      ) => {
        if (options.sweep === undefined ? ids.length < 2 : ids.length > 0) {
          return command.error('error: give two or more run ids, or --sweep ID', { exitCode: 2 });
        }
        await withClient(async (client) => {
          const runIds = options.sweep
            ? (
                await client.request<SweepResource>(
                  'GET',
                  `/v1/sweeps/${encodeURIComponent(options.sweep)}`,
                )
              ).body.runs.map((r) => r.id)
            : ids;
          const query = new URLSearchParams(runIds.map((id): [string, string] => ['run', id]));
          const { body } = await client.request<RunComparison>('GET', `/v1/runs/compare?${query}`);
          if (options.json) {
            writeOut(`${safeJson(body, 2)}\n`);
            return;
          }
          writeOut(comparisonText(body, options.metric));
          if (body.kind === 'eval' && runIds.length === 2) {
            const [a, b] = runIds as [string, string];
            const [ra, rb] = await Promise.all([fetchResults(client, a), fetchResults(client, b)]);
            writeOut(`\n${compareTable(ra, rb)}`);
          }
        });
      },
    );
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
