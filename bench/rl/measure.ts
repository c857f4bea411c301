// Timing and memory helpers for the bench: median wall time of repeats after warm-up, and the
// memcpy bandwidth that sets the memory floor.

export function medianMs(run: () => unknown, warmup: number, repeats: number): number {
  for (let k = 0; k < warmup; k++) run();
  const times: number[] = [];
  for (let k = 0; k < repeats; k++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/**
 * Memory bandwidth in bytes/ms, counting bytes read plus bytes written, from
 * Float32Array.prototype.set between two buffers far bigger than the last-level cache.
 */
export function memcpyBandwidth(
  bytes: number,
  warmup: number,
  repeats: number,
): { bytesPerMs: number; ms: number } {
  const source = new Float32Array(bytes / 4).fill(1.5);
  const target = new Float32Array(bytes / 4);
  const ms = medianMs(() => target.set(source), warmup, repeats);
  return { bytesPerMs: (2 * bytes) / ms, ms };
}

export function peakRssMiB(): number {
  return process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
}

export function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}
