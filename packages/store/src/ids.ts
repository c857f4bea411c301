// Run ids: `run_` + a ULID (48-bit ms timestamp + 80 random bits, Crockford base32, from the
// `ulid` package), so ids sort by creation time to the millisecond and the run index can page
// with ZRANGEBYLEX. Nothing relies on order within one millisecond.
import { ulid } from 'ulid';

export function newRunId(nowMs: number = Date.now()): string {
  return `run_${ulid(nowMs)}`;
}
