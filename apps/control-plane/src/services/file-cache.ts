// Parsed run files (eval items, rollout ledger segments) kept between requests: paging through
// a listing reads the same files again for every page. An entry is valid while the file's inode,
// size and mtime are those it was parsed at (a file replaced by a rename, or grown, is parsed
// again), and entries are evicted oldest-used first beyond a byte budget, so memory stays bounded.
import { readFile, stat } from 'node:fs/promises';

interface Entry {
  ino: number;
  size: number;
  mtimeMs: number;
  value: unknown;
}

export class FileCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** `parse(contents)` of `file`, from the cache when the file is unchanged; undefined when the
   * file does not exist. Each call site passes its own `parse` for its own files. */
  async read<T>(file: string, parse: (contents: Buffer) => T | Promise<T>): Promise<T | undefined> {
    let info;
    try {
      info = await stat(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const cached = this.entries.get(file);
    if (
      cached &&
      cached.ino === info.ino &&
      cached.size === info.size &&
      cached.mtimeMs === info.mtimeMs
    ) {
      this.entries.delete(file); // re-inserted: most recently used last
      this.entries.set(file, cached);
      return cached.value as T;
    }
    const contents = await readFile(file);
    const value = await parse(contents);
    this.forget(file);
    // Sized by what was read: a file that grew between stat and read is parsed again next time.
    if (contents.length <= this.maxBytes) {
      this.entries.set(file, {
        ino: info.ino,
        size: contents.length,
        mtimeMs: info.mtimeMs,
        value,
      });
      this.bytes += contents.length;
      for (const [key, entry] of this.entries) {
        if (this.bytes <= this.maxBytes) break;
        this.entries.delete(key);
        this.bytes -= entry.size;
      }
    }
    return value;
  }

  private forget(file: string): void {
    const entry = this.entries.get(file);
    if (entry) {
      this.entries.delete(file);
      this.bytes -= entry.size;
    }
  }
}
