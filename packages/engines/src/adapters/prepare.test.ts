// Unpacking sampler-weights archives: SkyRL's real layouts (JAX: gzip'd tar with a "/" root
// entry and a PEFT adapter; FSDP: plain tar of "./"-prefixed model files; persist=False: a lone
// MARKER), and hostile archives (traversal, absolute paths, link escapes, devices, oversize).
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { archiveRelativePath, extractArchive } from './archive.ts';
import { AdapterError } from './errors.ts';
import { prepareSamplerWeights } from './prepare.ts';

interface RawEntry {
  path: string;
  /** ustar typeflag: '0' file, '5' directory, '2' symlink, '1' hard link, '3' char device. */
  type?: '0' | '1' | '2' | '3' | '5';
  data?: string | Buffer;
  linkname?: string;
}

/** A ustar archive written byte by byte, so tests can put anything in a header (a real tar
 * tool refuses to write most of the hostile entries below). */
function rawTar(entries: readonly RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const data = Buffer.from(entry.data ?? '');
    const header = Buffer.alloc(512);
    const put = (offset: number, length: number, value: string) =>
      header.write(value.slice(0, length), offset, length, 'utf8');
    const octal = (offset: number, length: number, value: number) =>
      put(offset, length, value.toString(8).padStart(length - 1, '0') + '\0');
    put(0, 100, entry.path);
    octal(100, 8, entry.type === '5' ? 0o755 : 0o644);
    octal(108, 8, 0);
    octal(116, 8, 0);
    octal(124, 12, entry.type === undefined || entry.type === '0' ? data.length : 0);
    octal(136, 12, 1_760_000_000);
    header.write('        ', 148, 8, 'ascii');
    put(156, 1, entry.type ?? '0');
    put(157, 100, entry.linkname ?? '');
    put(257, 6, 'ustar\0');
    put(263, 2, '00');
    const sum = header.reduce((a, b) => a + b, 0);
    put(148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
    blocks.push(header);
    if (entry.type === undefined || entry.type === '0') {
      blocks.push(data, Buffer.alloc((512 - (data.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

const ADAPTER_CONFIG = JSON.stringify({
  base_model_name_or_path: 'Qwen/Qwen3-8B',
  peft_type: 'LORA',
  r: 32,
  lora_alpha: 32,
  target_modules: ['q_proj', 'v_proj'],
});

/** What SkyRL's JAX backend writes: `tar.add(tmp, arcname="")` under gzip (Python tarfile
 * names the root directory entry "/"). */
const skyrlJaxAdapter = (): Buffer =>
  gzipSync(
    rawTar([
      { path: '/', type: '5' },
      { path: 'adapter_config.json', data: ADAPTER_CONFIG },
      { path: 'adapter_model.safetensors', data: Buffer.alloc(2048, 7) },
    ]),
    { level: 0 },
  );

/** SkyRL's FSDP backend: `tar.add(hf_dir, arcname=".")`, uncompressed, a full merged model. */
const skyrlFsdpModel = (): Buffer =>
  rawTar([
    { path: './', type: '5' },
    { path: './config.json', data: '{"model_type":"qwen3"}' },
    { path: './model.safetensors', data: Buffer.alloc(1024, 1) },
    { path: './tokenizer.json', data: '{}' },
  ]);

let base: string;
afterEach(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

async function workspace(): Promise<string> {
  base = await mkdtemp(join(tmpdir(), 'anneal-adapters-'));
  return base;
}

async function archiveFile(name: string, bytes: Buffer): Promise<string> {
  const dir = await workspace();
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

async function failure(promise: Promise<unknown>): Promise<AdapterError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AdapterError);
  return error as AdapterError;
}

describe('prepareSamplerWeights', () => {
  it("unpacks SkyRL's {name}.tar.gz next to itself into the path the resolver gave", async () => {
    const dir = await workspace();
    await writeFile(join(dir, 'step-3.tar.gz'), skyrlJaxAdapter());
    const prepared = await prepareSamplerWeights(join(dir, 'step-3'));
    expect(prepared).toEqual({
      dir: join(dir, 'step-3'),
      kind: 'lora',
      rank: 32,
      archive: join(dir, 'step-3.tar.gz'),
      unpacked: true,
    });
    expect((await readdir(prepared.dir)).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
    ]);
    expect(await readFile(join(prepared.dir, 'adapter_config.json'), 'utf8')).toBe(ADAPTER_CONFIG);
    // No staging directory is left behind; a second call reuses the directory.
    expect((await readdir(dir)).sort()).toEqual(['step-3', 'step-3.tar.gz']);
    expect(await prepareSamplerWeights(join(dir, 'step-3'))).toMatchObject({ unpacked: false });
  });

  it('accepts a path that names the archive itself, and a plain adapter directory', async () => {
    const path = await archiveFile('ckpt.tar.gz', skyrlJaxAdapter());
    const prepared = await prepareSamplerWeights(path);
    expect(prepared).toMatchObject({ dir: path.slice(0, -'.tar.gz'.length), kind: 'lora' });
    expect(await prepareSamplerWeights(prepared.dir)).toEqual({
      dir: prepared.dir,
      kind: 'lora',
      rank: 32,
      unpacked: false,
    });
  });

  it("classifies SkyRL FSDP's uncompressed full-model tar as full weights", async () => {
    const dir = await workspace();
    await writeFile(join(dir, 'step-1.tar.gz'), skyrlFsdpModel()); // .tar.gz name, plain tar
    const prepared = await prepareSamplerWeights(join(dir, 'step-1'));
    expect(prepared.kind).toBe('full');
    expect(prepared.rank).toBeUndefined();
  });

  it("refuses SkyRL's persist=False MARKER; leaves other content to the server", async () => {
    const marker = await archiveFile(
      'm.tar.gz',
      rawTar([{ path: 'MARKER', data: 'SkyRL sampler marker' }]),
    );
    expect((await failure(prepareSamplerWeights(marker))).reason).toBe('marker-only');
    await rm(base, { recursive: true, force: true });
    const odd = await archiveFile('o.tar', rawTar([{ path: 'weights.bin', data: 'x' }]));
    expect(await prepareSamplerWeights(odd)).toMatchObject({ kind: 'unknown', unpacked: true });
  });

  it('leaves a path this process cannot see to the server', async () => {
    const dir = await workspace();
    expect(await prepareSamplerWeights(join(dir, 'nowhere'))).toEqual({
      dir: join(dir, 'nowhere'),
      kind: 'unavailable',
      unpacked: false,
    });
  });
});

describe('extractArchive refuses hostile archives and leaves nothing behind', () => {
  const hostile: Array<[string, RawEntry[], AdapterError['reason'], string]> = [
    ['a ../ entry', [{ path: '../evil.txt', data: 'x' }], 'unsafe-entry', 'escapes'],
    ['a nested ../ entry', [{ path: 'a/../../evil', data: 'x' }], 'unsafe-entry', 'escapes'],
    ['an absolute path', [{ path: '/etc/evil', data: 'x' }], 'unsafe-entry', 'escapes'],
    [
      'a symlink to an absolute path',
      [{ path: 'link', type: '2', linkname: '/etc/passwd' }],
      'unsafe-entry',
      'is absolute',
    ],
    [
      'a symlink climbing out',
      [{ path: 'sub/link', type: '2', linkname: '../../outside' }],
      'unsafe-entry',
      'points outside',
    ],
    [
      'a symlink through another symlink',
      [
        { path: 'up', type: '2', linkname: '.' },
        { path: 'x', type: '5' },
        { path: 'x/l', type: '2', linkname: '..' },
        { path: 'y', type: '2', linkname: 'x/l/../..' },
      ],
      'unsafe-entry',
      'y',
    ],
    [
      'a hard link to a file outside',
      [{ path: 'h', type: '1', linkname: '../../etc/passwd' }],
      'unsafe-entry',
      'does not name a file of the archive',
    ],
    ['a character device', [{ path: 'tty', type: '3' }], 'unsupported-entry', 'CharacterDevice'],
    [
      'the same file twice',
      [
        { path: 'a', data: '1' },
        { path: 'a', data: '2' },
      ],
      'unsafe-entry',
      'appears twice',
    ],
  ];
  for (const [what, entries, reason, detail] of hostile) {
    it(`refuses ${what}`, async () => {
      const archive = await archiveFile('bad.tar.gz', gzipSync(rawTar(entries)));
      const dest = join(base, 'out');
      const error = await failure(extractArchive(archive, dest));
      expect(error.reason).toBe(reason);
      expect(error.message).toContain(detail);
      expect(await readdir(base)).toEqual(['bad.tar.gz']); // no dest, no staging dir
    });
  }

  it('keeps links that stay inside', async () => {
    const archive = await archiveFile(
      'ok.tar',
      rawTar([
        { path: 'adapter_config.json', data: ADAPTER_CONFIG },
        { path: 'sub/alias.json', type: '2', linkname: '../adapter_config.json' },
        { path: 'copy.json', type: '1', linkname: 'adapter_config.json' },
      ]),
    );
    const dest = join(base, 'out');
    const result = await extractArchive(archive, dest);
    expect(result.files).toEqual(['adapter_config.json']);
    expect(await readFile(join(dest, 'sub/alias.json'), 'utf8')).toBe(ADAPTER_CONFIG);
    expect(await readFile(join(dest, 'copy.json'), 'utf8')).toBe(ADAPTER_CONFIG);
  });

  it('enforces the per-entry, total and entry-count caps before writing', async () => {
    const entries = [
      { path: 'a', data: Buffer.alloc(600) },
      { path: 'b', data: Buffer.alloc(600) },
    ];
    const archive = await archiveFile('big.tar', rawTar(entries));
    const dest = join(base, 'out');
    const perEntry = await failure(extractArchive(archive, dest, { maxEntryBytes: 512 }));
    expect(perEntry.message).toContain('"a" is 600 bytes (cap 512)');
    const total = await failure(extractArchive(archive, dest, { maxTotalBytes: 1000 }));
    expect(total.message).toContain('total more than 1000 bytes');
    const count = await failure(extractArchive(archive, dest, { maxEntries: 1 }));
    expect(count.message).toContain('more than 1 entries');
    expect(await readdir(base)).toEqual(['big.tar']);
  });

  it('fails (does not hang) on an archive cut off in the middle of a file', async () => {
    const tar = rawTar([{ path: 'adapter_model.safetensors', data: Buffer.alloc(300_000, 3) }]);
    const archive = await archiveFile('cut.tar.gz', gzipSync(tar).subarray(0, 200));
    const error = await failure(extractArchive(archive, join(base, 'out')));
    expect(error.reason).toBe('corrupt');
    expect(error.message).toContain('unexpected end of file');
    expect(await readdir(base)).toEqual(['cut.tar.gz']);
    const plain = join(base, 'cut.tar');
    await writeFile(plain, tar.subarray(0, 100_000));
    expect((await failure(extractArchive(plain, join(base, 'out')))).message).toContain(
      'Truncated input',
    );
  });

  it('reports a file that is not a tar as corrupt', async () => {
    const archive = await archiveFile('junk.tar.gz', Buffer.from('definitely not a tarball'));
    const error = await failure(extractArchive(archive, join(base, 'out')));
    expect(error.reason).toBe('corrupt');
  });
});

describe('archiveRelativePath', () => {
  it('normalises the root and "./" prefixes and rejects escapes', () => {
    expect(['', '.', './', '/'].map(archiveRelativePath)).toEqual(['', '', '', '']);
    expect(archiveRelativePath('./a//b/./c')).toBe('a/b/c');
    expect(archiveRelativePath('/abs')).toBeUndefined();
    expect(archiveRelativePath('a/../b')).toBeUndefined();
    expect(archiveRelativePath('a\\..\\b')).toBeUndefined();
  });
});
