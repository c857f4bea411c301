// Large byte buffers reused from one HTTP exchange to the next: reply bodies read from the socket
// and request bodies written as bytes (the trainer's datums). A buffer of fresh memory costs more
// to fill than the bytes written into it — the kernel maps and zeroes each page on first touch —
// and V8 counts every new backing store towards the external memory that starts its full
// garbage collections. bench/overhead: copying a step's reply bodies into fresh buffers was 7.6 %
// of the orchestrator's main thread, nearly all of it page faults (docs/performance.md
// "Orchestrator overhead: buffers reused").
//
// Buffers are SharedArrayBuffer memory, so a reader thread can be handed a reply without a copy.
// They come in power-of-two sizes from MIN_POOLED_BYTES up; a buffer is given back by whoever
// took it once nothing reads it any more (its bytes are then overwritten by the next taker).
// What is given back past the pool's byte limit is left to the garbage collector, as is a buffer
// never given back: forgetting to give one back costs only the reuse.
import { Buffer } from 'node:buffer';

/** Below this, `Buffer.allocUnsafe` slices Node's own pre-allocated slab or a small malloc
 * chunk that the allocator reuses anyway: nothing to gain. */
export const MIN_POOLED_BYTES = 1 << 16;

export interface BytePoolStats {
  /** Buffers handed out from the pool. */
  reused: number;
  /** Buffers allocated because the pool had none of the size. */
  allocated: number;
  /** Bytes held for reuse now. */
  pooledBytes: number;
}

export class BytePool {
  private readonly free = new Map<number, Buffer[]>();
  /** Every buffer this pool handed out and that was not given back, so a buffer is given back at
   * most once and only buffers of this pool are taken in. */
  private readonly lent = new WeakSet<Buffer>();
  private pooled = 0;
  private reusedCount = 0;
  private allocatedCount = 0;

  /** @param limitBytes the most bytes held for reuse at once. */
  constructor(private readonly limitBytes: number) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes < 0) {
      throw new RangeError(`BytePool: limitBytes must be an integer >= 0, got ${limitBytes}`);
    }
  }

  /** A buffer of at least `minBytes` (its `length` is its size class); its contents are
   * whatever the last user left. Sizes below MIN_POOLED_BYTES are plain allocations. */
  take(minBytes: number): Buffer {
    if (minBytes < MIN_POOLED_BYTES) return Buffer.allocUnsafe(minBytes);
    const size = sizeClass(minBytes);
    const buffer = this.free.get(size)?.pop();
    if (buffer !== undefined) {
      this.pooled -= size;
      this.reusedCount += 1;
    } else {
      this.allocatedCount += 1;
    }
    // shared memory: a reader thread reads a reply where it lies (vllm/reply-readers.ts)
    const taken = buffer ?? Buffer.from(new SharedArrayBuffer(size));
    this.lent.add(taken);
    return taken;
  }

  /** Gives back a buffer `take` returned; nothing may read or write it afterwards. Anything else
   * (a small allocation, a buffer given back twice, another pool's) is ignored. */
  give(buffer: Buffer): void {
    if (!this.lent.delete(buffer)) return;
    const size = buffer.length;
    if (this.pooled + size > this.limitBytes) return;
    let list = this.free.get(size);
    if (list === undefined) {
      list = [];
      this.free.set(size, list);
    }
    list.push(buffer);
    this.pooled += size;
  }

  stats(): BytePoolStats {
    return {
      reused: this.reusedCount,
      allocated: this.allocatedCount,
      pooledBytes: this.pooled,
    };
  }
}

/** The smallest power of two >= bytes (bytes >= MIN_POOLED_BYTES). */
function sizeClass(bytes: number): number {
  let size = MIN_POOLED_BYTES;
  while (size < bytes) size *= 2;
  return size;
}

/** The most bytes this process keeps for reuse: a step's policy replies in flight together
 * (32 replies of 4.3 MB take 8 MiB each at production shape) and the trainer's request
 * (128 datums of 4,096 tokens: ~25 MB, a 32 MiB buffer) fit. */
export const PROCESS_POOL_BYTES = 384 * 2 ** 20;

/** The buffers every engine client of this process shares. */
export const processBytePool = new BytePool(PROCESS_POOL_BYTES);
