// Sampling seeds derived from the run's seed and a stream name, so a resumed run (GRPO rollouts,
// reference rollouts, eval answers) samples the same tokens as the run it resumes.
import { deriveSeed } from '@anneal/rl';

/** A 31-bit sampling seed for one named stream (accepted by every engine). */
export function samplingSeed(seed: number, key: string): number {
  return deriveSeed(seed, key) >>> 1;
}
