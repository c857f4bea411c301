// `anneal runs watch ID`: follows GET /v1/runs/{id}/events (SSE) — a per-step table and, on a
// terminal, a live progress bar — reconnecting with Last-Event-ID after a dropped connection.
// Exits when the run reaches a terminal state (after its usage line): 0 if it succeeded, 1 if
// it failed or was cancelled (or the watch itself failed).
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { RunEvent, RunResource, RunUsage } from '@anneal/protocol';
import { isTerminal } from '@anneal/protocol/run-states';
import { withApi } from '../ops/output.ts';
import { usageLine } from '../ops/usage.ts';
import { WatchRenderer } from '../watch/render.ts';
import { followEvents } from '../watch/stream.ts';
import { safeJson, writeOut } from '../ops/terminal-text.ts';

interface WatchFlags {
  json?: boolean;
  metrics?: string[];
  giveUpAfter: number;
}

function positiveSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number > 0.');
  return n;
}

function metricList(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new InvalidArgumentError('must name at least one metric.');
  return names;
}

export function registerWatch(runs: Command): void {
  runs
    .command('watch')
    .description(
      'Follow a run live: per-step table and progress bar (plain lines when not a terminal); ' +
        'exits 0 when it succeeds, 1 when it fails or is cancelled',
    )
    .argument('<id>', 'run id')
    .option('--json', 'print each event as one JSON line (id + event) instead of the table')
    .option(
      '--metrics <names>',
      'comma-separated step metrics to show (default: by run kind)',
      metricList,
    )
    .option(
      '--give-up-after <seconds>',
      'exit 1 after failing to reconnect for this long',
      positiveSeconds,
      300,
    )
    .action(async (id: string, flags: WatchFlags) => {
      await withApi(async (client) => {
        const { body: run } = await client.request<RunResource>(
          'GET',
          `/v1/runs/${encodeURIComponent(id)}`,
        );
        const totalSteps = 'steps' in run.spec ? run.spec.steps : undefined;
        const renderer = new WatchRenderer(
          {
            runId: run.id,
            kind: run.kind,
            state: run.state,
            ...(totalSteps !== undefined && { totalSteps }),
          },
          process.stdout,
          flags.metrics,
        );
        if (!flags.json) renderer.start();
        let final: { to: string; reason: string; by: string } | undefined;
        await followEvents({
          client,
          path: `/v1/runs/${encodeURIComponent(run.id)}/events`,
          giveUpAfterMs: flags.giveUpAfter * 1000,
          onDrop: ({ reason, delayMs }) =>
            renderer.notice(
              `anneal: event stream dropped (${reason}); reconnecting in ${(delayMs / 1000).toFixed(1)} s`,
              process.stderr,
            ),
          onReconnected: ({ lastEventId }) =>
            renderer.notice(
              `anneal: reconnected (after event ${lastEventId ?? 'none'})`,
              process.stderr,
            ),
          onEvent: (sse) => {
            const event = JSON.parse(sse.data) as RunEvent;
            if (flags.json) {
              writeOut(`${safeJson({ id: sse.id, ...event })}\n`);
            } else if (event.type === 'step:committed') {
              renderer.step(event.step, event.metrics, event.at);
            } else if (event.type === 'checkpoint:saved') {
              renderer.checkpoint(event.step, event.path);
            } else if (event.type === 'run:notice') {
              renderer.notice(`anneal: notice [${event.code}]: ${event.message}`, process.stderr);
            } else if (event.type === 'guardrail:fired') {
              renderer.notice(`anneal: guardrail ${event.action}: ${event.reason}`, process.stderr);
            } else {
              renderer.stateChange(event.from, event.to, event.reason, event.principal);
            }
            if (event.type === 'run:state' && isTerminal(event.to)) {
              final = {
                to: event.to,
                reason: event.reason,
                by: event.principal === undefined ? '' : ` by ${event.principal}`,
              };
              return 'stop';
            }
            return 'continue';
          },
        });
        if (!final) throw new Error('the event stream ended without a terminal state');
        if (!flags.json) {
          renderer.finish(`run ${run.id} ${final.to}${final.by} (${final.reason})`);
          const { body: usage } = await client.request<RunUsage>(
            'GET',
            `/v1/runs/${encodeURIComponent(run.id)}/usage`,
          );
          writeOut(`${usageLine(usage)}\n`);
        }
        process.exitCode = final.to === 'succeeded' ? 0 : 1;
      });
    });
}
