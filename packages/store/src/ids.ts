// Run ids: `run_` + ULID (48-bit ms timestamp + 80 random bits, Crockford base32), so ids
// sort by creation time and the run index can page with ZRANGEBYLEX.
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function encodeTime(ms: number): string {
  let out = '';
  let rest = ms;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD.charAt(rest % 32) + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  let out = '';
  // 16 chars x 5 bits = 80 bits = 10 bytes.
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += CROCKFORD.charAt((value >>> (bits - 5)) & 31);
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return out;
}

// Random bytes come from a pool refilled 4 KiB at a time (one OpenSSL call per ~400 ids).
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let poolOffset = 0;

function tenRandomBytes(): Uint8Array {
  if (poolOffset + 10 > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + 10);
  poolOffset += 10;
  return bytes;
}

export function newRunId(
  nowMs: number = Date.now(),
  random: Uint8Array = tenRandomBytes(),
): string {
  return `run_${encodeTime(nowMs)}${encodeRandom(random)}`;
}
