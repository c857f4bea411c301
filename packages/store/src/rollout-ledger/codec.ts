// How a ledger data file's groups are compressed, told by the file's name (layout.ts): one
// Brotli stream a group at quality 1 (`.br`, written since 2026-12-07), or one gzip member a
// group (`.gz`, steps written before, still read and pruned). Both run on libuv's thread pool.
//
// Why Brotli at quality 1: on bench/overhead's step (18 MB of JSON lines of prose-like text a
// step, 64 groups) zlib's fastest gzip level cost 212 ms CPU for a 2.22× ratio; Brotli at
// quality 1 112 ms for 2.31× (quality 0: 74 ms, 2.06×). The price: a data file is a sequence of
// Brotli streams, which no command-line tool reads whole as `zcat` read the gzip members; each
// group's stream is read by its extent in the index (`brotli -d` reads one cut out with `dd`).
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants, gunzip } from 'node:zlib';

const brotliCompressAsync = promisify(brotliCompress);
const brotliDecompressAsync = promisify(brotliDecompress);
const gunzipAsync = promisify(gunzip);

/** Brotli's quality for the ledger: written every step, read now and then. */
export const LEDGER_BROTLI_QUALITY = 1;

/** One group's JSON lines compressed as the files this version writes hold them. */
export function compressGroup(lines: Uint8Array): Promise<Buffer> {
  return brotliCompressAsync(lines, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: LEDGER_BROTLI_QUALITY,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: lines.byteLength,
    },
  });
}

/** One group's JSON lines from its compressed bytes in `file` (by the file's name). */
export function decompressGroup(file: string, member: Buffer): Promise<Buffer> {
  if (file.endsWith('.br')) return brotliDecompressAsync(member);
  if (file.endsWith('.gz')) return gunzipAsync(member);
  throw new Error(`rollout ledger: ${file}: neither .br nor .gz, no codec to read it with`);
}
