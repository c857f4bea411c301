// `anneal runs export` when the download is cut short: a server (the export route's wire shape:
// a tar with Content-Length) sends half the archive and closes the connection. Nothing is left
// in --out or beside it, and the error says how far the download got and that nothing was
// written; the full archive from the same server lands whole.
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPORT_MANIFEST_FILE } from '@anneal/protocol';
import { ApiClient } from '../src/api/client.ts';
import { exportCheckpoint } from '../src/commands/export.ts';
import { anneal } from './cli-process.ts';

let dir = '';
let archive: Buffer;
let server: Server;
let url = '';

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-export-cut-'));
  const source = path.join(dir, 'source');
  await mkdir(source);
  await writeFile(path.join(source, 'model.onnx'), Buffer.alloc(256 * 1024, 7));
  await writeFile(
    path.join(source, EXPORT_MANIFEST_FILE),
    JSON.stringify({ run: { id: 'run_cut' }, step: 1, weights: { files: ['model.onnx'] } }),
  );
  const { c: create } = await import('tar');
  const chunks: Buffer[] = [];
  for await (const chunk of create({ cwd: source }, ['model.onnx', EXPORT_MANIFEST_FILE]))
    chunks.push(chunk as Buffer);
  archive = Buffer.concat(chunks);
  server = createServer((request, response) => {
    response.writeHead(200, {
      'content-type': 'application/x-tar',
      'content-length': String(archive.length),
    });
    if (request.url?.includes('/checkpoints/1/')) {
      response.end(archive);
      return;
    }
    // Half, flushed, then the connection drops (a control plane restarting mid-download).
    response.write(archive.subarray(0, archive.length >> 1), () => response.socket?.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('export download cut short', () => {
  it('leaves no partial folder, and says what happened', async () => {
    const out = path.join(dir, 'cut', 'export');
    const client = new ApiClient({ url, token: 't' });
    await expect(exportCheckpoint(client, 'run_cut', { step: 2, out })).rejects.toThrow(
      new RegExp(
        `^export of run_cut step 2: the download stopped after \\d+ of ${archive.length} bytes \\(.+\\); nothing was written to ${out}\\.`,
      ),
    );
    expect(await readdir(path.join(dir, 'cut'))).toEqual([]);

    // An --out that already exists (empty) is left as it was.
    await mkdir(out);
    await expect(exportCheckpoint(client, 'run_cut', { step: 2, out })).rejects.toThrow(
      /stopped after/,
    );
    expect(await readdir(path.join(dir, 'cut'))).toEqual(['export']);
    expect(await readdir(out)).toEqual([]);

    // The whole archive from the same server: into the existing folder, complete.
    const manifest = await exportCheckpoint(client, 'run_cut', { step: 1, out });
    expect(manifest).toMatchObject({ step: 1 });
    expect((await readdir(out)).sort()).toEqual([EXPORT_MANIFEST_FILE, 'model.onnx']);
    expect((await readFile(path.join(out, 'model.onnx'))).length).toBe(256 * 1024);
    expect(await readdir(path.join(dir, 'cut'))).toEqual(['export']);
  });

  it('the CLI exits 1 with that message, not a bare "terminated"', async () => {
    const out = path.join(dir, 'cli-out');
    const run = await anneal(['runs', 'export', 'run_cut', '--step', '2', '--out', out], {
      ANNEAL_URL: url,
      ANNEAL_TOKEN: 't',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/the download stopped after \d+ of \d+ bytes .*nothing was written/);
    expect((await readdir(dir)).filter((name) => name.includes('cli-out'))).toEqual([]);
  }, 60_000);
});
