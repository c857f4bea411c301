// Parsed run files (eval items, rollout ledger indexes and groups) kept between requests: paging
// through a listing reads the same files again for every page. An entry holds the version of
// what it was computed from — a file's inode, size and mtime, so a file replaced by a rename, or
// grown, is parsed again — and entries are evicted oldest-used first beyond a byte budget, so
// memory stays bounded.
import { readFile, stat } from 'node:fs/promises';

interface Entry {
  version: string;
  bytes: number;
  value: unknown;
}

/** What a file's version is made of; undefined when it does not exist. */
async function fileVersion(file: string): Promise<string | undefined> {
  try {
    const info = await stat(file);
    return `${info.ino}:${info.size}:${info.mtimeMs}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export class FileCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** `parse(contents)` of `file`, from the cache when the file is unchanged; undefined when the
   * file does not exist. Each call site passes its own `parse` for its own files. */
  async read<T>(file: string, parse: (contents: Buffer) => T): Promise<T | undefined> {
    return (await this.readVersioned(file, parse))?.value;
  }

  /** As `read`, with the version of the file the value was parsed from. */
  async readVersioned<T>(
    file: string,
    parse: (contents: Buffer) => T,
  ): Promise<{ value: T; version: string } | undefined> {
    const version = await fileVersion(file);
    if (version === undefined) return undefined;
    const cached = this.lookup(file, version);
    if (cached) return { value: cached.value as T, version };
    let contents: Buffer;
    try {
      contents = await readFile(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const value = parse(contents);
    // A file that changed between stat and read gets another version next time: parsed again.
    this.store(file, version, contents.length, value);
    return { value, version };
  }

  /** `compute()`, or what it returned before for the same `key` and `version`; null results are
   * not kept. `bytes` estimates the value's size for the budget. */
  async derived<T>(
    key: string,
    version: string,
    bytes: number,
    compute: () => Promise<T | null>,
  ): Promise<T | null> {
    const cached = this.lookup(key, version);
    if (cached) return cached.value as T;
    const value = await compute();
    if (value !== null) this.store(key, version, bytes, value);
    return value;
  }

  private lookup(key: string, version: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.version !== version) return undefined;
    this.entries.delete(key); // re-inserted: most recently used last
    this.entries.set(key, entry);
    return entry;
  }

  private store(key: string, version: string, bytes: number, value: unknown): void {
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.bytes;
    }
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { version, bytes, value });
    this.bytes += bytes;
    for (const [k, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= entry.bytes;
    }
  }
}
