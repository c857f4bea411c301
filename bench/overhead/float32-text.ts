// bench/overhead float32 writer: one GRPO step's worth of float32 logprobs (2,117,632 values,
// logprob-like: −x for x log-uniform over [1e-4, 20], seeded) written as the Tinker request
// writer writes a float32 tensor, both ways: String() of each value as a double (`numbers`,
// byte for byte what JSON.stringify writes) and the float32 text (`float32s`, float32-text.ts:
// at most 9 digits that read back as the same float32). Interleaved, 5 repetitions each, median
// ms and the bytes written; checks that every float32s value reads back bit-equal.
// `npm run bench:float32-text -w bench` (a few seconds). `-- --exhaustive` instead writes every
// positive non-integer float32 from 1e-14 to 2^23 (all the writer formats itself; a negative
// value is the same digits after '-') and reads each back through JSON.parse: about 4 minutes.
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createRng } from '@anneal/rl';
import { JsonBytesWriter } from '@anneal/engines/testing';

const { values: args } = parseArgs({
  options: { exhaustive: { type: 'boolean', default: false } },
});
if (args.exhaustive) {
  exhaustive();
  process.exit(process.exitCode ?? 0);
}

const VALUES = 2_117_632;
const REPETITIONS = 5;

const rng = createRng(7);
const logprobs = Float32Array.from({ length: VALUES }, () => -1e-4 * (20 / 1e-4) ** rng.next());

type Way = 'String()' | 'float32s';
const write = (way: Way): Uint8Array => {
  const writer = new JsonBytesWriter().raw('[');
  if (way === 'String()') writer.numbers(logprobs);
  else writer.float32s(logprobs);
  return writer.raw(']').finish();
};

const times: Record<Way, number[]> = { 'String()': [], float32s: [] };
const bytes: Record<Way, number> = { 'String()': 0, float32s: 0 };
const loadBefore = loadavg();
for (let r = 0; r <= REPETITIONS; r += 1) {
  for (const way of ['String()', 'float32s'] as const) {
    const start = performance.now();
    const out = write(way);
    const ms = performance.now() - start;
    if (r > 0) times[way].push(ms); // repetition 0 warms up
    bytes[way] = out.length;
  }
}

const back = JSON.parse(new TextDecoder().decode(write('float32s'))) as number[];
const differing = back.filter((v, i) => Math.fround(v) !== logprobs[i]).length;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
console.log(
  `float32 writer: ${VALUES.toLocaleString('en')} values, median of ${REPETITIONS}; load ${load(loadBefore)} -> ${load(loadavg())}`,
);
for (const way of ['String()', 'float32s'] as const) {
  console.log(
    `  ${way.padEnd(9)} ${median(times[way]).toFixed(1).padStart(7)} ms  ${bytes[way].toLocaleString('en').padStart(12)} bytes  (${times[way].map((t) => t.toFixed(0)).join(' ')})`,
  );
}
console.log(
  `  float32s: ${(median(times['String()']) / median(times.float32s)).toFixed(2)}× faster, ${((100 * bytes.float32s) / bytes['String()']).toFixed(1)} % of the bytes; values not read back as the same float32: ${differing}`,
);
if (differing > 0) process.exitCode = 1;

/** Every positive non-integer float32 in [1e-14, 2^23), one writer per 2^20 of them. */
function exhaustive(): void {
  const bits = new Uint32Array(1);
  const float = new Float32Array(bits.buffer);
  float[0] = Math.fround(1e-14);
  const from = bits[0]!;
  float[0] = 2 ** 23;
  const to = bits[0]!;
  const start = performance.now();
  let checked = 0;
  let wrong = 0;
  const chunk = new Float32Array(1 << 20);
  for (let at = from; at < to; at += chunk.length) {
    const length = Math.min(chunk.length, to - at);
    const patterns = new Uint32Array(chunk.buffer, 0, length);
    for (let i = 0; i < length; i += 1) patterns[i] = at + i;
    const values = chunk.subarray(0, length);
    const text = new TextDecoder().decode(
      new JsonBytesWriter().raw('[').float32s(values).raw(']').finish(),
    );
    const back = JSON.parse(text) as number[];
    for (let i = 0; i < length; i += 1) {
      if (Math.fround(back[i]!) !== values[i]) {
        wrong += 1;
        if (wrong <= 10) console.log(`  ${values[i]} read back as ${back[i]}`);
      }
    }
    checked += length;
  }
  console.log(
    `float32 writer, exhaustive: ${checked.toLocaleString('en')} float32 in [1e-14, 2^23) in ${((performance.now() - start) / 1000).toFixed(0)} s; not read back as the same float32: ${wrong}`,
  );
  if (wrong > 0) process.exitCode = 1;
}
