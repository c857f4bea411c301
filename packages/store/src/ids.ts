// Run ids: `run_` + a ULID (sweep ids: `sweep_` + one) (48-bit ms timestamp + 80 random bits, Crockford base32, from the
// `ulid` package), so ids sort by creation time to the millisecond and the run index can page
// with ZRANGEBYLEX. Nothing relies on order within one millisecond.
import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

// The package's default source draws each of the 16 random characters with its own
// crypto.getRandomValues call (hundreds of µs per id, on every POST /v1/runs); the same bytes
// come from a pool filled 4 KiB at a time. Each byte is used once, as `byte / 256`, exactly as the
// default source turns its byte into a fraction.
const pool = new Uint8Array(4096);
let next = pool.length;

function randomFraction(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return (pool[next++] as number) / 256;
}

export function newRunId(nowMs: number = Date.now()): string {
  return `run_${ulid(nowMs, randomFraction)}`;
}

export function newSweepId(nowMs: number = Date.now()): string {
  return `sweep_${ulid(nowMs, randomFraction)}`;
}
