// The flat ("CSR") layout every batched function in this package uses: the per-token values of a
// batch of rollouts live in one typed array, and rollout i owns the slots
// [offsets[i], offsets[i + 1]). offsets has one more entry than there are rollouts, starts at 0,
// never decreases and ends at the token count. One allocation per batch, none per rollout.

/** Per-token values of a batch of rollouts (shape: values (T,), offsets (N + 1,)). */
export interface RaggedBatch {
  values: Float32Array;
  offsets: Int32Array;
}

/** Number of rollouts described by `offsets`. */
export function rolloutCount(offsets: Int32Array): number {
  return Math.max(0, offsets.length - 1);
}

/** Throw a RangeError unless `offsets` is a valid CSR index over `tokenCount` tokens. */
export function assertOffsets(offsets: Int32Array, tokenCount: number): void {
  if (offsets.length === 0) throw new RangeError('offsets: needs at least one entry (0)');
  if (offsets[0] !== 0) throw new RangeError(`offsets[0]: must be 0, got ${offsets[0]}`);
  for (let i = 1; i < offsets.length; i++) {
    if (offsets[i]! < offsets[i - 1]!) {
      throw new RangeError(`offsets[${i}]: decreases (${offsets[i - 1]} -> ${offsets[i]})`);
    }
  }
  const last = offsets[offsets.length - 1]!;
  if (last !== tokenCount) {
    throw new RangeError(`offsets: last entry ${last} != token count ${tokenCount}`);
  }
}

/** Throw unless two per-token arrays pair up token for token. */
export function assertSameLength(a: ArrayLike<number>, b: ArrayLike<number>, what: string): void {
  if (a.length !== b.length)
    throw new RangeError(`${what}: lengths differ (${a.length} vs ${b.length})`);
}

/** Pack per-rollout arrays into one ragged batch (a convenience for tests and small batches). */
export function packRagged(rows: ReadonlyArray<ArrayLike<number>>): RaggedBatch {
  const offsets = new Int32Array(rows.length + 1);
  for (let i = 0; i < rows.length; i++) offsets[i + 1] = offsets[i]! + rows[i]!.length;
  const values = new Float32Array(offsets[rows.length]!);
  for (let i = 0; i < rows.length; i++) values.set(rows[i]!, offsets[i]!);
  return { values, offsets };
}
