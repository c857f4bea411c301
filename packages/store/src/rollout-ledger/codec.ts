// How a ledger data file's groups are compressed, told by the file's name (layout.ts): one
// Brotli stream a group at quality 1 (`.br`, the default since 2026-12-07) or one gzip member a
// group at level 1 (`.gz`: the operator's `ledger.compression: gzip`, and every step written
// before). Both run on libuv's thread pool; the reader and the pruner take either.
//
// Why Brotli by default: on bench/overhead's step (18 MB of JSON lines of prose-like text, 64
// groups) gzip level 1 cost 212 ms CPU for a 2.22× ratio, Brotli at quality 1 112 ms for 2.31×
// (quality 0: 74 ms, 2.06×). The price: a file of several Brotli streams is read whole by no
// command-line tool (each group's stream, cut out by its extent, by `brotli -d`), while a file of
// gzip members is one gzip file to `zcat`, pandas and Python's standard library — which is what
// `gzip` is kept for.
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants, gunzip, gzip } from 'node:zlib';
import type { LedgerCompression } from '@anneal/protocol';
import { GZIP_REST_FILE, GZIP_SAMPLE_FILE, REST_FILE, SAMPLE_FILE } from './layout.ts';

const brotliCompressAsync = promisify(brotliCompress);
const brotliDecompressAsync = promisify(brotliDecompress);
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Brotli's quality and gzip's level for the ledger: written every step, read now and then. */
export const LEDGER_BROTLI_QUALITY = 1;
export const LEDGER_GZIP_LEVEL = 1;

export interface LedgerCodec {
  /** How its data files' names end: what tells a reader the codec. */
  extension: string;
  /** The step's two data files. */
  sampleFile: string;
  restFile: string;
  /** One group's JSON lines, compressed. */
  compress(lines: Uint8Array): Promise<Buffer>;
  /** One group's JSON lines from what `compress` made of them. */
  decompress(member: Buffer): Promise<Buffer>;
}

export const LEDGER_CODECS: Record<LedgerCompression, LedgerCodec> = {
  brotli: {
    extension: '.br',
    sampleFile: SAMPLE_FILE,
    restFile: REST_FILE,
    compress: (lines) =>
      brotliCompressAsync(lines, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: LEDGER_BROTLI_QUALITY,
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_SIZE_HINT]: lines.byteLength,
        },
      }),
    decompress: (member) => brotliDecompressAsync(member),
  },
  gzip: {
    extension: '.gz',
    sampleFile: GZIP_SAMPLE_FILE,
    restFile: GZIP_REST_FILE,
    compress: (lines) => gzipAsync(lines, { level: LEDGER_GZIP_LEVEL }),
    decompress: (member) => gunzipAsync(member),
  },
};

/** One group's JSON lines from its compressed bytes in `file` (by the file's name). */
export function decompressGroup(file: string, member: Buffer): Promise<Buffer> {
  const codec = Object.values(LEDGER_CODECS).find((c) => file.endsWith(c.extension));
  if (codec === undefined) {
    throw new Error(`rollout ledger: ${file}: neither .br nor .gz, no codec to read it with`);
  }
  return codec.decompress(member);
}
