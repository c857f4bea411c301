// The archive the export route writes is read back by the real `tar` (node-tar, what the CLI
// unpacks with, and GNU tar): names, sizes and bytes survive, including a file streamed from
// disk and sizes that are and are not multiples of 512.
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { x as extract } from 'tar';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { tarStream } from './tar-stream.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-tar-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('writes a ustar archive node-tar and GNU tar read back byte for byte', async () => {
  const big = Buffer.alloc(5000, 7);
  big.writeUInt32LE(0xdeadbeef, 1000);
  await writeFile(path.join(dir, 'weights.bin'), big);
  const manifest = Buffer.from('{"format":"anneal-export/v1"}\n');
  const block = Buffer.alloc(1024, 1);
  const archive = path.join(dir, 'out.tar');
  const mtime = new Date('2026-12-02T00:00:00Z');
  await pipeline(
    tarStream([
      { name: 'manifest.json', size: manifest.length, mtime, source: manifest },
      {
        name: 'model.onnx',
        size: big.length,
        mtime,
        source: { file: path.join(dir, 'weights.bin') },
      },
      { name: 'exact.bin', size: block.length, mtime, source: block },
    ]),
    createWriteStream(archive),
  );
  const out = path.join(dir, 'out');
  await mkdir(out);
  await extract({ file: archive, cwd: out, strict: true });
  expect(await readFile(path.join(out, 'manifest.json'))).toEqual(manifest);
  expect(await readFile(path.join(out, 'model.onnx'))).toEqual(big);
  expect(await readFile(path.join(out, 'exact.bin'))).toEqual(block);
  const { stdout } = await promisify(execFile)('tar', ['-tvf', archive]);
  expect(
    stdout
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/).at(-1)),
  ).toEqual(['manifest.json', 'model.onnx', 'exact.bin']);
});

it('refuses a name that is not one ASCII path segment before writing anything', () => {
  const entry = (name: string) => ({ name, size: 0, mtime: new Date(), source: Buffer.alloc(0) });
  expect(() => tarStream([entry('../etc/passwd')])).toThrow(RangeError);
  expect(() => tarStream([entry('a'.repeat(101))])).toThrow(RangeError);
});
