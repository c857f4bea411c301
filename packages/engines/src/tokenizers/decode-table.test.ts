import { describe, expect, it } from 'vitest';
import { compareGenerated } from '@anneal/wasm-tools';
import { seededRng } from '../http/timing.ts';
import { DECODE_KERNEL } from '../../wasm/compile.ts';
import { DECODE_KERNEL_BASE64, DECODE_KERNEL_BYTES } from './decode-kernel-bytes.ts';
import { DecodeTable, ROW_BYTES } from './decode-table.ts';

describe('src/tokenizers/decode-kernel-bytes.ts (generated from wasm/decode-kernel.wat)', () => {
  it('matches a fresh compile of the .wat byte for byte (else: npm run gen:wasm -w @anneal/engines)', async () => {
    const drift = await compareGenerated(DECODE_KERNEL, DECODE_KERNEL_BASE64);
    expect(drift).toEqual({ committedBytes: DECODE_KERNEL_BYTES, same: true });
  });
});

/** A table of `rows` rows: a third not built, a tenth long (count 0xff), the rest 1–15 bytes. */
function fill(table: DecodeTable, rng: () => number): void {
  const rows = table.rows;
  for (let id = 0; id < table.rowCount; id += 1) {
    const r = rng();
    if (r < 0.3) continue;
    if (r < 0.4) {
      rows[4 * id + 3] = 0xff << 24;
      continue;
    }
    const size = 1 + Math.floor(rng() * 15);
    for (let k = 0; k < size; k += 1) {
      rows[4 * id + (k >> 2)]! |= (1 + Math.floor(rng() * 255)) << (8 * (k & 3));
    }
    rows[4 * id + 3]! |= size << 24;
  }
}

/** copyRows from every stop to the end, as decode calls it: each stop's index, and the bytes. */
function run(table: DecodeTable, ids: Int32Array): { stops: number[]; bytes: number[] } {
  const start = table.load(ids);
  const stops: number[] = [];
  let at = start;
  for (let i = 0; i < ids.length; i += 1) {
    i = table.copyRows(i, at);
    at = table.end;
    stops.push(i);
    if (i < ids.length) at = table.append(Uint8Array.of(0x2a, 0x2a), at, i + 1);
  }
  return { stops, bytes: [...table.slice(start, at)] };
}

describe('DecodeTable', () => {
  it('runs its loop in the WebAssembly kernel on this runtime', () => {
    expect(new DecodeTable(4).usesKernel).toBe(true);
    expect(new DecodeTable(4, { kernel: false }).usesKernel).toBe(false);
  });

  it('writes the same bytes and stops at the same tokens in the kernel as in JavaScript', () => {
    const rng = seededRng(41);
    for (let trial = 0; trial < 40; trial += 1) {
      const rowCount = 1 + Math.floor(rng() * 600);
      const kernel = new DecodeTable(rowCount);
      const script = new DecodeTable(rowCount, { kernel: false });
      fill(kernel, seededRng(trial));
      fill(script, seededRng(trial));
      // long enough, now and then, to grow the memory past its first pages
      const length =
        trial % 8 === 0 ? 20_000 + Math.floor(rng() * 20_000) : Math.floor(rng() * 200);
      const ids = Int32Array.from({ length }, () =>
        rng() < 0.02
          ? rng() < 0.5
            ? -1 - Math.floor(rng() * 5)
            : rowCount + Math.floor(rng() * 5)
          : Math.floor(rng() * rowCount),
      );
      const a = run(kernel, ids);
      const b = run(script, ids);
      expect(a.stops).toEqual(b.stops);
      expect(a.bytes).toEqual(b.bytes);
      // every stop is a token its row does not hold; every other token wrote its row's count
      const expected: number[] = [];
      for (const id of ids) {
        const inside = id >= 0 && id < rowCount;
        const size = inside ? kernel.rows[4 * id + 3]! >>> 24 : 0;
        if (!inside || size === 0 || size >= ROW_BYTES) expected.push(0x2a, 0x2a);
        else
          for (let k = 0; k < size; k += 1)
            expected.push((kernel.rows[4 * id + (k >> 2)]! >>> (8 * (k & 3))) & 0xff);
      }
      expect(a.bytes).toEqual(expected);
    }
  });

  it('refuses ids that are not int32 rather than wrap them into another token', () => {
    const table = new DecodeTable(8);
    expect(() => table.load([1, 2 ** 32 + 1])).toThrow(
      /token id 4294967297 is outside the vocabulary/,
    );
    expect(() => table.load([1.5])).toThrow(/token id 1.5 is outside the vocabulary/);
    expect(table.load([1, 2])).toBeGreaterThan(0);
  });
});
