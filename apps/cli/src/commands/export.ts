// `anneal runs export ID [--step N] --out DIR`: a kept checkpoint's weights in the format people
// deploy, plus manifest.json (GET /v1/runs/{id}/checkpoints/{step}/export, docs/checkpoints.md).
// Without --step: the run's latest kept checkpoint. The tar is unpacked as it arrives (node-tar
// refuses absolute paths and `..`), into DIR, which must not hold an export already.
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import { type CheckpointList, EXPORT_MANIFEST_FILE, type ExportManifest } from '@anneal/protocol';
import { type ApiClient, clientFromEnv, formatApiError } from '../api/client.ts';

/** The resume point's step (always kept), else the newest kept one; throws when the run has
 * none. One page of one entry, whatever the catalogue's length. */
async function latestKeptStep(client: ApiClient, runId: string): Promise<number> {
  const { body } = await client.request<CheckpointList>(
    'GET',
    `/v1/runs/${runId}/checkpoints?status=kept&order=desc&limit=1`,
  );
  const step = body.summary.latest ?? body.checkpoints[0]?.step;
  if (step === undefined) throw new Error(`run ${runId} has no kept checkpoint to export`);
  return step;
}

export async function exportCheckpoint(
  client: ApiClient,
  runId: string,
  options: { step?: number; out: string },
): Promise<ExportManifest> {
  const out = path.resolve(options.out);
  if (existsSync(path.join(out, EXPORT_MANIFEST_FILE))) {
    throw new Error(
      `${out} already holds an export (${EXPORT_MANIFEST_FILE}); choose another --out`,
    );
  }
  const step = options.step ?? (await latestKeptStep(client, runId));
  const response = await client.stream(`/v1/runs/${runId}/checkpoints/${step}/export`, {
    headers: { accept: 'application/x-tar' },
  });
  if (!response.body) throw new Error(`export of ${runId} step ${step}: empty response`);
  await mkdir(out, { recursive: true });
  // loaded here, not at start-up: registering the commands loads no heavy module (startup-imports)
  const { x: extract } = await import('tar');
  await pipeline(
    Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>),
    extract({ cwd: out, strict: true }),
  );
  return JSON.parse(await readFile(path.join(out, EXPORT_MANIFEST_FILE), 'utf8')) as ExportManifest;
}

function parseStep(value: string): number {
  const step = Number(value);
  if (!Number.isInteger(step) || step < 0) throw new Error(`--step: not a step number: ${value}`);
  return step;
}

export function registerExport(runs: Command): void {
  runs
    .command('export')
    .description(
      "Export a checkpoint's weights (ONNX for embedded runs) with manifest.json into DIR",
    )
    .argument('<id>', 'run id')
    .option('--step <n>', 'checkpoint step (default: the latest kept one)', parseStep)
    .requiredOption('--out <dir>', 'directory to write (created if missing)')
    .action(async (id: string, options: { step?: number; out: string }) => {
      try {
        const manifest = await exportCheckpoint(clientFromEnv(process.env), id, options);
        process.stdout.write(
          `exported ${manifest.run.id} step ${manifest.step} (${manifest.weights.format}, base ` +
            `${manifest.baseModel.name}) to ${path.resolve(options.out)}: ` +
            `${[EXPORT_MANIFEST_FILE, ...manifest.weights.files].join(', ')}\n`,
        );
      } catch (error) {
        process.stderr.write(`${formatApiError(error)}\n`);
        process.exitCode = 1;
      }
    });
}
