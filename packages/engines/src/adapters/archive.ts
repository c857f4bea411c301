// Safe extraction of a trainer's sampler-weights archive (docs/engines.md "Weight sync to the
// sampler"). SkyRL writes `{base}/{model_id}/sampler_weights/{name}.tar.gz` (its JAX backend: a
// gzip'd tar whose root entry is the directory "/" followed by `adapter_config.json` and
// `adapter_model.safetensors`; its FSDP backend: a plain, uncompressed tar under that name with
// "./config.json", "./model*.safetensors", …), and vLLM only loads directories. The archive
// comes from another machine, so nothing in it is trusted:
// - only regular files, directories and links are extracted (no devices, FIFOs, modes, owners);
// - an absolute path, a `..` segment, or a link that resolves outside the destination fails the
//   whole extraction (nothing is silently stripped or skipped);
// - sizes are capped per entry, in total, and by entry count, before any byte is written;
// - links are created after every file, so no file is ever written through a link, and each
//   symlink's real path is checked once all exist;
// - everything goes to a temporary directory next to the destination, renamed into place only
//   when complete: readers (vLLM) never see a half-written adapter.
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { link, mkdir, realpath, rename, rm, stat, symlink } from 'node:fs/promises';
import { basename, dirname, join, posix, sep } from 'node:path';
import { Parser } from 'tar';
import type { ReadEntry } from 'tar';
import { AdapterError } from './errors.ts';

export interface ArchiveLimits {
  /** Sum of all entry sizes (default 8 GiB). */
  maxTotalBytes?: number;
  /** One entry (default 8 GiB: a merged 7B model is one ~15 GB file only when sharding is off). */
  maxEntryBytes?: number;
  /** Number of entries, directories included (default 10 000). */
  maxEntries?: number;
}

export const DEFAULT_ARCHIVE_LIMITS: Required<ArchiveLimits> = {
  maxTotalBytes: 8 * 1024 ** 3,
  maxEntryBytes: 8 * 1024 ** 3,
  maxEntries: 10_000,
};

export interface ExtractResult {
  /** Files written (archive-relative paths). */
  files: string[];
  totalBytes: number;
  /** False when another process finished extracting the same archive first. */
  extracted: boolean;
}

interface PendingLink {
  kind: 'symlink' | 'hardlink';
  path: string;
  target: string;
}

/** `dir/./a//b` -> `dir/a/b`; '' for the archive root ('', '.', './', '/'); undefined for an
 * absolute path or one with a `..` segment. */
export function archiveRelativePath(raw: string): string | undefined {
  if (raw.includes('\0') || raw.includes('\\')) return undefined;
  const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) return undefined;
  if (raw.startsWith('/') && segments.length > 0) return undefined;
  return segments.join('/');
}

/** Extracts `archive` (tar or tar.gz) into `dest`, which must not exist yet. */
export async function extractArchive(
  archive: string,
  dest: string,
  limits: ArchiveLimits = {},
): Promise<ExtractResult> {
  const caps = { ...DEFAULT_ARCHIVE_LIMITS, ...limits };
  const staging = join(
    dirname(dest),
    `.${basename(dest)}.unpack-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  await mkdir(staging, { recursive: false, mode: 0o755 });
  try {
    const result = await extractInto(archive, staging, caps);
    try {
      await rename(staging, dest);
    } catch (error) {
      // Another worker renamed its copy of the same archive first: use theirs.
      if (!isExistsError(error) || !(await isDirectory(dest))) throw error;
      await rm(staging, { recursive: true, force: true });
      return { ...result, extracted: false };
    }
    return { ...result, extracted: true };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

async function extractInto(
  archive: string,
  root: string,
  caps: Required<ArchiveLimits>,
): Promise<Omit<ExtractResult, 'extracted'>> {
  const files = new Set<string>();
  const directories = new Set<string>(['']);
  const links: PendingLink[] = [];
  const writes: Array<Promise<void>> = [];
  /** Files being written: closed by force when the archive fails mid-entry (the entry's body
   * never ends then, e.g. a truncated gzip). */
  const open = new Set<WriteStream>();
  let totalBytes = 0;
  let entries = 0;
  const parser = new Parser({ strict: true });
  let failure: unknown;
  const fail = (error: unknown): void => {
    failure ??= error;
    parser.abort(error instanceof Error ? error : new Error(String(error)));
  };
  const reject = (reason: AdapterError['reason'], detail: string): void =>
    fail(new AdapterError(reason, archive, detail));

  parser.on('entry', (entry: ReadEntry) => {
    if (failure !== undefined) return void entry.resume();
    entries += 1;
    const raw = entry.path;
    const path = archiveRelativePath(raw);
    if (entries > caps.maxEntries) {
      return reject('too-large', `more than ${caps.maxEntries} entries`);
    }
    if (path === undefined) {
      return reject('unsafe-entry', `entry ${JSON.stringify(raw)} escapes the destination`);
    }
    if (entry.size > caps.maxEntryBytes) {
      return reject(
        'too-large',
        `entry ${JSON.stringify(raw)} is ${entry.size} bytes (cap ${caps.maxEntryBytes})`,
      );
    }
    totalBytes += entry.size;
    if (totalBytes > caps.maxTotalBytes) {
      return reject('too-large', `entries total more than ${caps.maxTotalBytes} bytes`);
    }
    const claimed = (): boolean => {
      if (!files.has(path) && !links.some((l) => l.path === path) && !directories.has(path)) {
        return false;
      }
      reject('unsafe-entry', `entry ${JSON.stringify(raw)} appears twice`);
      return true;
    };
    switch (entry.type) {
      case 'Directory':
        if (path === '' || directories.has(path)) return void entry.resume();
        if (claimed()) return;
        directories.add(path);
        writes.push(mkdir(join(root, path), { recursive: true, mode: 0o755 }).then(() => {}));
        return void entry.resume();
      case 'File':
      case 'OldFile':
      case 'ContiguousFile': {
        if (path === '') return reject('unsafe-entry', `file entry ${JSON.stringify(raw)}`);
        if (claimed()) return;
        files.add(path);
        const target = join(root, path);
        writes.push(
          mkdir(dirname(target), { recursive: true, mode: 0o755 })
            .then(() =>
              failure === undefined ? writeEntry(entry, target, open) : void entry.resume(),
            )
            .catch((error: unknown) => fail(error)),
        );
        return;
      }
      case 'SymbolicLink':
      case 'Link': {
        const target = entry.linkpath ?? '';
        if (path === '' || claimed()) return void (path === '' && reject('unsafe-entry', raw));
        links.push({ kind: entry.type === 'Link' ? 'hardlink' : 'symlink', path, target });
        return void entry.resume();
      }
      default:
        return reject(
          'unsupported-entry',
          `entry ${JSON.stringify(raw)} is a ${entry.type} (only files, directories and links)`,
        );
    }
  });

  try {
    await new Promise<void>((resolve, reject) => {
      parser.on('error', reject);
      parser.on('abort', reject);
      parser.on('end', () => resolve());
      const input = createReadStream(archive);
      input.on('error', reject);
      input.pipe(parser as unknown as NodeJS.WritableStream);
    });
  } catch (error) {
    failure ??= error;
  }
  if (failure !== undefined) for (const out of open) out.destroy();
  await Promise.allSettled(writes);
  if (failure instanceof AdapterError) throw failure;
  if (failure !== undefined) {
    const message = failure instanceof Error ? failure.message : String(failure);
    throw new AdapterError('corrupt', archive, `not a readable tar/tar.gz: ${message}`, failure);
  }
  await createLinks(archive, root, links, files);
  return { files: [...files].sort(), totalBytes };
}

/** Hard links must name a regular file of the archive; symlinks must resolve (lexically, then
 * for real once all exist) inside the destination. */
async function createLinks(
  archive: string,
  root: string,
  links: readonly PendingLink[],
  files: ReadonlySet<string>,
): Promise<void> {
  const unsafe = (l: PendingLink, why: string) =>
    new AdapterError(
      'unsafe-entry',
      archive,
      `${l.kind} ${JSON.stringify(l.path)} -> ${JSON.stringify(l.target)} ${why}`,
    );
  for (const l of links) {
    await mkdir(dirname(join(root, l.path)), { recursive: true, mode: 0o755 });
    if (l.kind === 'hardlink') {
      const target = archiveRelativePath(l.target);
      if (target === undefined || !files.has(target)) {
        throw unsafe(l, 'does not name a file of the archive');
      }
      await link(join(root, target), join(root, l.path));
      continue;
    }
    if (l.target.startsWith('/') || l.target.includes('\0')) throw unsafe(l, 'is absolute');
    const resolved = posix.normalize(posix.join(posix.dirname(l.path), l.target));
    if (resolved === '..' || resolved.startsWith('../')) throw unsafe(l, 'points outside');
    await symlink(l.target, join(root, l.path));
  }
  const realRoot = await realpath(root);
  for (const l of links) {
    if (l.kind !== 'symlink') continue;
    let real: string;
    try {
      real = await realpath(join(root, l.path));
    } catch {
      throw unsafe(l, 'does not resolve to anything in the archive');
    }
    if (real !== realRoot && !real.startsWith(realRoot + sep)) throw unsafe(l, 'points outside');
  }
}

/** Streams one entry's body to a new file (never over an existing one). */
function writeEntry(entry: ReadEntry, target: string, open: Set<WriteStream>): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(target, { mode: 0o644, flags: 'wx' });
    open.add(out);
    out.on('error', reject);
    out.on('close', () => {
      open.delete(out);
      resolve();
    });
    entry.on('error', (error: unknown) => {
      out.destroy();
      reject(error instanceof Error ? error : new Error(String(error)));
    });
    entry.pipe(out);
  });
}

function isExistsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'EEXIST' || code === 'ENOTEMPTY';
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
