// A POSIX ustar archive written as a stream (POSIX.1-1988 "ustar Interchange Format"): one 512-byte
// header per regular file, its bytes padded to 512, two zero blocks at the end. An export is a
// handful of flat files, some large (adapter weights), so they are streamed from disk, never
// buffered, and the archive needs no temporary copy.
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';

const BLOCK = 512;

export interface TarEntry {
  /** File name in the archive: one segment, ASCII, ≤ 100 bytes. */
  name: string;
  size: number;
  mtime: Date;
  /** In-memory bytes, or a file to stream (it must still be `size` bytes long). */
  source: Buffer | { file: string };
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(entry: TarEntry): Buffer {
  if (!/^[\x21-\x7e]{1,100}$/.test(entry.name) || entry.name.includes('/')) {
    throw new RangeError(`tar entry name ${JSON.stringify(entry.name)} is not one ASCII segment`);
  }
  const block = Buffer.alloc(BLOCK);
  const put = (text: string, offset: number) => block.write(text, offset, 'ascii');
  put(entry.name, 0);
  put(octal(0o644, 8), 100); // mode
  put(octal(0, 8), 108); // uid
  put(octal(0, 8), 116); // gid
  put(octal(entry.size, 12), 124);
  put(octal(Math.floor(entry.mtime.getTime() / 1000), 12), 136);
  put(' '.repeat(8), 148); // checksum field counts as spaces while summing
  put('0', 156); // typeflag: regular file
  put('ustar\0', 257);
  put('00', 263);
  let sum = 0;
  for (const byte of block) sum += byte;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return block;
}

async function* chunks(entries: readonly TarEntry[]): AsyncGenerator<Buffer> {
  for (const entry of entries) {
    yield header(entry);
    let written = 0;
    if (Buffer.isBuffer(entry.source)) {
      written = entry.source.length;
      yield entry.source;
    } else {
      for await (const chunk of createReadStream(entry.source.file)) {
        written += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
    }
    if (written !== entry.size) {
      throw new Error(`${entry.name}: ${written} bytes read, ${entry.size} expected (it changed)`);
    }
    const pad = (BLOCK - (entry.size % BLOCK)) % BLOCK;
    if (pad > 0) yield Buffer.alloc(pad);
  }
  yield Buffer.alloc(2 * BLOCK);
}

export function tarStream(entries: readonly TarEntry[]): Readable {
  // Names are checked before the first byte is sent: a bad one is an error response, not a
  // truncated archive.
  for (const entry of entries) header(entry);
  return Readable.from(chunks(entries), { objectMode: false });
}
