import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { setHeapGrowingPercent } from './heap.ts';

/** The factor of every old-generation limit V8 computed in a process that set `percent` and then
 * allocated, as V8 prints it under --trace-gc-verbose (src/heap/heap-controller.cc): V8 11 (Node
 * 20) prints the factor it applied after each new limit ("[HeapController] Limit: old size: … KB,
 * new limit: … KB (2.0)", its "factor … based on" line being the one it computed before the
 * flag); later V8 (Node 24) applies the flag first and prints it as "[HeapController] factor 2.0
 * based on …", its limit line without one. */
function factorsAfter(percent: number): string[] {
  const module = JSON.stringify(fileURLToPath(new URL('./heap.ts', import.meta.url)));
  const script = `
    import { setHeapGrowingPercent } from ${module};
    setHeapGrowingPercent(Number(process.argv[1]));
    const keep = [];
    for (let i = 0; i < 400; i += 1) keep[i % 40] = Array.from({ length: 20000 }, (_, j) => ({ j }));
  `;
  const lines = execFileSync(
    process.execPath,
    [
      '--conditions=@anneal/source',
      '--import',
      'tsx',
      '--trace-gc-verbose',
      '--input-type=module',
      '-e',
      script,
      String(percent),
    ],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  ).split('\n');
  const read = (pattern: RegExp) => lines.flatMap((line) => pattern.exec(line)?.[1] ?? []);
  const applied = read(/\[HeapController\] Limit: .*\(([0-9.]+)\)$/);
  return applied.length > 0 ? applied : read(/\[HeapController\] factor ([0-9.]+) based on/);
}

describe('setHeapGrowingPercent', () => {
  it('refuses a value V8 would misread', () => {
    expect(() => setHeapGrowingPercent(-1)).toThrow(RangeError);
    expect(() => setHeapGrowingPercent(1.5)).toThrow(/integer >= 0, got 1.5/);
  });

  it("fixes the factor V8 applies to the process's next heap limits; 0 leaves V8 its own", () => {
    const fixed = factorsAfter(100);
    expect(fixed.length).toBeGreaterThan(0);
    expect(new Set(fixed)).toEqual(new Set(['2.0']));
    // this allocation pattern is one V8 gives a larger factor of its own
    const own = factorsAfter(0);
    expect(own.length).toBeGreaterThan(0);
    expect(own.some((factor) => factor !== '2.0')).toBe(true);
  });
});
