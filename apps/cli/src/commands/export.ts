// `anneal runs export ID [--step N] --out DIR`: a kept checkpoint's weights in the format people
// deploy, plus manifest.json (GET /v1/runs/{id}/checkpoints/{step}/export, docs/checkpoints.md).
// Without --step: the run's latest kept checkpoint. The tar is unpacked as it arrives (node-tar
// refuses absolute paths and `..`) into a temporary folder beside DIR, moved into DIR once whole;
// DIR must not hold an export already.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import type { CheckpointList, ExportManifest } from '@anneal/protocol';
import { type ApiClient, clientFromEnv, formatApiError } from '../api/client.ts';
import { writeErr, writeOut } from '../ops/terminal-text.ts';

/** The export's manifest file name. @anneal/protocol's values load when an export runs, not
 * when the commands are registered (its schemas and YAML parser are most of a cold start:
 * bench/startup). */
const manifestFile = async (): Promise<string> =>
  (await import('@anneal/protocol')).EXPORT_MANIFEST_FILE;

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
  const manifestName = await manifestFile();
  if (existsSync(path.join(out, manifestName))) {
    throw new Error(`${out} already holds an export (${manifestName}); choose another --out`);
  }
  const step = options.step ?? (await latestKeptStep(client, runId));
  const response = await client.stream(`/v1/runs/${runId}/checkpoints/${step}/export`, {
    headers: { accept: 'application/x-tar' },
  });
  if (!response.body) throw new Error(`export of ${runId} step ${step}: empty response`);
  // Unpacked beside DIR under a temporary name, moved into DIR only once whole: a download cut
  // short leaves nothing behind (a half-written weights file looks like a model).
  await mkdir(path.dirname(out), { recursive: true });
  const temp = await mkdtemp(path.join(path.dirname(out), `.${path.basename(out)}.partial-`));
  let received = 0;
  let manifest: ExportManifest;
  try {
    // loaded here, not at start-up: registering the commands loads no heavy module (startup-imports)
    const { x: extract } = await import('tar');
    const body = Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>);
    body.on('data', (chunk: Uint8Array) => (received += chunk.length));
    await pipeline(body, extract({ cwd: temp, strict: true }));
    manifest = JSON.parse(await readFile(path.join(temp, manifestName), 'utf8')) as ExportManifest;
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    const expected = response.headers.get('content-length');
    throw new Error(
      `export of ${runId} step ${step}: the download stopped after ${received} ` +
        `${expected ? `of ${expected} ` : ''}bytes (${(error as Error).message}); nothing ` +
        `was written to ${out}. Run the same command again.`,
      { cause: error },
    );
  }
  try {
    await moveInto(temp, out, manifestName);
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  return manifest;
}

/** Moves the unpacked export into `out`: the whole folder when `out` does not exist, else each
 * entry, the manifest last (an export is complete once its manifest is there). */
async function moveInto(temp: string, out: string, manifest: string): Promise<void> {
  if (!existsSync(out)) {
    await rename(temp, out);
    return;
  }
  const names = (await readdir(temp)).filter((name) => name !== manifest);
  const order = [...names, manifest];
  const taken = order.find((name) => existsSync(path.join(out, name)));
  if (taken) throw new Error(`${path.join(out, taken)} already exists; choose another --out`);
  for (const name of order) await rename(path.join(temp, name), path.join(out, name));
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
        writeOut(
          `exported ${manifest.run.id} step ${manifest.step} (${manifest.weights.format}, base ` +
            `${manifest.baseModel.name}) to ${path.resolve(options.out)}: ` +
            `${[await manifestFile(), ...manifest.weights.files].join(', ')}\n`,
        );
      } catch (error) {
        writeErr(`${formatApiError(error)}\n`);
        process.exitCode = 1;
      }
    });
}
