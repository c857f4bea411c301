// Argument checks shared by the per-group reward functions. They throw RangeError naming the
// field path (e.g. `toolErrors[2]`) so callers can surface the exact problem.

export function assertGroupLengths(fields: Record<string, ArrayLike<number>>): number {
  const entries = Object.entries(fields);
  const size = entries[0]?.[1].length ?? 0;
  for (const [name, values] of entries) {
    if (values.length !== size)
      throw new RangeError(`${name}: ${values.length} values, expected ${size}`);
  }
  return size;
}

export function assertBinary(values: ArrayLike<number>, name: string): void {
  for (let i = 0; i < values.length; i++) {
    if (values[i] !== 0 && values[i] !== 1)
      throw new RangeError(`${name}[${i}]: must be 0 or 1, got ${values[i]}`);
  }
}

export function assertUnitInterval(values: ArrayLike<number>, name: string): void {
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (!(value >= 0 && value <= 1))
      throw new RangeError(`${name}[${i}]: must be in [0, 1], got ${value}`);
  }
}

export function assertCounts(values: ArrayLike<number>, name: string): void {
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (!Number.isInteger(value) || value < 0) {
      throw new RangeError(`${name}[${i}]: must be an integer >= 0, got ${value}`);
    }
  }
}

export function assertNonNegative(value: number, name: string): void {
  if (!(Number.isFinite(value) && value >= 0))
    throw new RangeError(`${name}: must be a finite number >= 0, got ${value}`);
}
