// Per-segment sampling seeds: a rollout's first segment uses seed + k (vLLM's `n` semantics);
// later segments get a seed mixed from (seed, rollout index, turn) so turns never repeat draws.

export function segmentSeed(seed: number, rolloutIndex: number, turn: number): number {
  if (turn === 0) return (seed + rolloutIndex) >>> 0;
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (rolloutIndex + 0x632be5ab), 0xc2b2ae35);
  h = Math.imul(h ^ (turn * 0x27d4eb2d), 0x165667b1);
  return (h ^ (h >>> 15)) >>> 1; // non-negative 31-bit: accepted by every engine
}
