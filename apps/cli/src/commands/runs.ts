// `anneal submit FILE [--dry-run]` and `anneal runs ls|get|cancel|pause|resume`: thin REST client commands
// (ANNEAL_URL, ANNEAL_TOKEN). A sweep document (`kind: sweep`) is submitted to POST /v1/sweeps.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { RunEstimate, RunResource, RunUsage, SweepResource } from '@anneal/protocol';
import { RUN_STATES } from '@anneal/protocol/run-states';
import { type ApiClient, clientFromEnv, formatApiError } from '../api/client.ts';
import { table } from '../ops/output.ts';
import { estimateLines, usageLine } from '../ops/usage.ts';
import { registerCheckpoints } from './checkpoints.ts';
import { registerExport } from './export.ts';
import { registerResults } from './results.ts';
import { registerItems } from './items.ts';
import { registerRollouts } from './rollouts.ts';
import { registerWatch } from './watch.ts';
import { safeJson, terminalSafe, writeErr, writeOut } from '../ops/terminal-text.ts';

async function withClient(action: (client: ApiClient) => Promise<void>): Promise<void> {
  try {
    await action(clientFromEnv(process.env));
  } catch (error) {
    writeErr(`${formatApiError(error)}\n`);
    process.exitCode = 1;
  }
}

function contentTypeOf(file: string, text: string): string {
  if (/\.json$/i.test(file)) return 'application/json';
  if (/\.ya?ml$/i.test(file)) return 'application/yaml';
  return text.trimStart().startsWith('{') ? 'application/json' : 'application/yaml';
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function register(program: Command): void {
  program
    .command('submit')
    .description(
      'Submit a run spec (JSON or YAML); prints the run id. A sweep (`kind: sweep`) prints ' +
        'the sweep id, and its run ids on stderr',
    )
    .argument('<file>', 'run spec or sweep file, or - for stdin')
    .option('--idempotency-key <key>', 'same key + same spec returns the same run')
    .option('--json', 'print the whole run (or the estimate) as JSON')
    .option('--dry-run', 'validate and price the spec (cost per step and in total); queue nothing')
    .option('--prompt-tokens <n>', 'with --dry-run: mean prompt tokens per sampling request')
    .option('--step-seconds <s>', 'with --dry-run: seconds a step holds its worker slot')
    .action(async (file: string, options: SubmitFlags, command: Command) => {
      let text: string;
      try {
        text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
      } catch (error) {
        return command.error(`error: cannot read '${file}': ${(error as Error).message}`, {
          exitCode: 2,
        });
      }
      // loaded here, not at start: it parses YAML and builds the spec schemas (bench/startup)
      const { isSweepDocument } = await import('@anneal/protocol');
      const sweep = isSweepDocument(text);
      if (options.dryRun && sweep) {
        return command.error('error: --dry-run prices run specs, not sweeps', { exitCode: 2 });
      }
      if (options.dryRun) {
        await withClient((client) => dryRun(client, file, text, options));
        return;
      }
      if (sweep) {
        await withClient((client) => submitSweep(client, file, text, options));
        return;
      }
      await withClient(async (client) => {
        const { status, body: run } = await client.request<RunResource>('POST', '/v1/runs', {
          body: text,
          contentType: contentTypeOf(file, text),
          ...(options.idempotencyKey && {
            headers: { 'idempotency-key': options.idempotencyKey },
          }),
        });
        writeOut(options.json ? `${safeJson(run, 2)}\n` : `${run.id}\n`);
        if (status === 200) writeErr(`anneal: existing run ${run.id} (same Idempotency-Key)\n`);
      });
    });

  const runs = program
    .command('runs')
    .description('List, inspect, watch, pause, resume and cancel runs');
  registerWatch(runs);
  registerResults(runs);
  registerRollouts(runs);
  registerItems(runs);
  registerCheckpoints(runs);
  registerExport(runs);

  runs
    .command('ls')
    .description('List runs of your tenant, newest first')
    .option('--state <state>', RUN_STATES.join(' | '))
    .option('--kind <kind>', 'sft | rm | grpo | eval')
    .option('--label <key=value>', 'label filter (repeatable)', collect, [])
    .option('--limit <n>', 'page size (1-200)', '50')
    .option('--json', 'print the raw page as JSON')
    .action(
      async (options: {
        state?: string;
        kind?: string;
        label: string[];
        limit: string;
        json?: boolean;
      }) => {
        await withClient(async (client) => {
          const query = new URLSearchParams({ limit: options.limit });
          if (options.state) query.set('state', options.state);
          if (options.kind) query.set('kind', options.kind);
          for (const label of options.label) query.append('label', label);
          const { body } = await client.request<{ runs: RunResource[]; nextCursor: string | null }>(
            'GET',
            `/v1/runs?${query}`,
          );
          if (options.json) {
            writeOut(`${safeJson(body, 2)}\n`);
            return;
          }
          const rows = body.runs.map((r) => [
            r.id,
            r.kind,
            r.state,
            r.pool,
            String(r.priority),
            r.lastStep === undefined ? '-' : String(r.lastStep),
            r.createdAt,
          ]);
          writeOut(
            `${table([['ID', 'KIND', 'STATE', 'POOL', 'PRIORITY', 'STEP', 'CREATED'], ...rows])}\n`,
          );
        });
      },
    );

  runs
    .command('get')
    .description('Show a run (JSON), with its transitions')
    .argument('<id>', 'run id')
    .action(async (id: string) => {
      await withClient(async (client) => {
        const { body } = await client.request<RunResource>(
          'GET',
          `/v1/runs/${encodeURIComponent(id)}`,
        );
        writeOut(`${safeJson(body, 2)}\n`);
        // On stderr: stdout stays the run's JSON for scripts.
        if (body.waitingReason) writeErr(`waiting: ${terminalSafe(body.waitingReason)}\n`);
        const { body: usage } = await client.request<RunUsage>(
          'GET',
          `/v1/runs/${encodeURIComponent(id)}/usage`,
        );
        writeErr(`${usageLine(usage)}\n`);
      });
    });

  runs
    .command('cancel')
    .description('Cancel a run (at once if waiting, at the next step boundary if running)')
    .argument('<id>', 'run id')
    .option('--reason <text>', 'recorded in the run history')
    .action(async (id: string, options: { reason?: string }) => {
      await withClient(async (client) => {
        const { status, body } = await runAction(client, id, 'cancel', options.reason);
        writeOut(
          status === 202
            ? `cancel requested ${body.id} (running; it stops at the next step boundary)\n`
            : `cancelled ${body.id}\n`,
        );
      });
    });

  runs
    .command('pause')
    .description(
      'Pause a run: at once if waiting; if running, at the next step boundary after a ' +
        'checkpoint (its worker slot is freed)',
    )
    .argument('<id>', 'run id')
    .option('--reason <text>', 'recorded in the run history')
    .action(async (id: string, options: { reason?: string }) => {
      await withClient(async (client) => {
        const { status, body } = await runAction(client, id, 'pause', options.reason);
        writeOut(
          status === 202
            ? `pause requested ${body.id} (running; it pauses at the next step boundary)\n`
            : `paused ${body.id}\n`,
        );
      });
    });

  runs
    .command('resume')
    .description('Resume a paused run: queued again, it continues from its checkpoint')
    .argument('<id>', 'run id')
    .option('--reason <text>', 'recorded in the run history')
    .action(async (id: string, options: { reason?: string }) => {
      await withClient(async (client) => {
        const { body } = await runAction(client, id, 'resume', options.reason);
        writeOut(
          body.state === 'queued'
            ? `resumed ${body.id} (queued)\n`
            : `${body.id} is ${body.state}\n`,
        );
      });
    });
}

/** POST /v1/runs/{id}/cancel|pause|resume, with the reason recorded in the run history. */
function runAction(
  client: ApiClient,
  id: string,
  action: 'cancel' | 'pause' | 'resume',
  reason: string | undefined,
) {
  return client.request<RunResource>('POST', `/v1/runs/${encodeURIComponent(id)}/${action}`, {
    body: JSON.stringify(reason ? { reason } : {}),
  });
}

/** POST /v1/sweeps: the sweep id on stdout, its runs on stderr. */
async function submitSweep(client: ApiClient, file: string, text: string, flags: SubmitFlags) {
  const { status, body } = await client.request<SweepResource>('POST', '/v1/sweeps', {
    body: text,
    contentType: contentTypeOf(file, text),
    ...(flags.idempotencyKey && { headers: { 'idempotency-key': flags.idempotencyKey } }),
  });
  writeOut(flags.json ? `${safeJson(body, 2)}\n` : `${body.id}\n`);
  if (status === 200) writeErr(`anneal: existing sweep ${body.id} (same Idempotency-Key)\n`);
  writeErr(`anneal: sweep of ${body.runs.length} runs: ${body.runs.map((r) => r.id).join(' ')}\n`);
}

interface SubmitFlags {
  idempotencyKey?: string;
  json?: boolean;
  dryRun?: boolean;
  promptTokens?: string;
  stepSeconds?: string;
}

/** `submit --dry-run`: POST /v1/runs/estimate validates the spec as a submission would. */
async function dryRun(client: ApiClient, file: string, text: string, flags: SubmitFlags) {
  const query = new URLSearchParams();
  if (flags.promptTokens !== undefined) query.set('promptTokens', flags.promptTokens);
  if (flags.stepSeconds !== undefined) query.set('stepSeconds', flags.stepSeconds);
  const { body } = await client.request<RunEstimate>(
    'POST',
    `/v1/runs/estimate${query.size > 0 ? `?${query}` : ''}`,
    { body: text, contentType: contentTypeOf(file, text) },
  );
  writeOut(flags.json ? `${safeJson(body, 2)}\n` : `${estimateLines(body).join('\n')}\n`);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
