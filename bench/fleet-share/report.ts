// bench/fleet-share's figures from one (mode, K) round: the runs' step records (the worker's
// trace), their resources (the control plane's times and demand) and what the fake replicas saw
// (engine-host.ts `FleetStats`); the table and the soak's bounds.
import type { FleetStats, RunTrace } from '../pipeline/stack.ts';

/** The run resources' times and demand (the control plane's record). */
export interface RunTimes {
  id: string;
  createdMs: number;
  startedMs: number;
  endedMs: number;
  demand: number;
}

export interface FleetRow {
  mode: 'admitted' | 'oversubscribed';
  k: number;
  /** Runs that succeeded, and why the others did not. */
  finished: number;
  failures: string[];
  makespanS: number;
  tokens: number;
  tokensPerSecond: number;
  /** tokensPerSecond ÷ (K × the solo run's), when the solo run was measured. */
  ofKSolo: number | undefined;
  /** Median (over runs) of each run's median seconds between step commits, and the slowest. */
  stepS: number;
  stepMaxS: number;
  rolloutS: number;
  trainS: number;
  /** Runs running together in the share window, and the largest |share ÷ weight − 1|. */
  shareRuns: number;
  shareDeviation: number;
  /** Most names listed on a replica at once, and the most demand admitted at once. */
  peakListed: number;
  admittedDemand: number;
  /** Most names one run had listed at once (sampled), and its demand. */
  peakPerRun: number;
  demand: number;
  leaked: number;
  crossServed: number;
  reads: number;
  evictions: number;
  stalledS: number;
  failedUnloads: number;
  peakBatch: number;
  /** Runs that waited for capacity (> 1 s queued), the longest wait, and the longest delay
   * between capacity freeing (another run ending) and a waiting run starting. */
  waited: number;
  waitMaxS: number;
  startDelayMaxS: number | undefined;
}

const median = (xs: readonly number[]) => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const stepSeconds = (trace: RunTrace) => {
  const at = trace.steps.map((s) => s.atMs).sort((a, b) => a - b);
  return median(at.slice(1).map((t, i) => (t - at[i]!) / 1000));
};

const phase = (traces: readonly RunTrace[], name: string) =>
  median(traces.flatMap((t) => t.steps.map((s) => s.metrics[`phase_seconds/${name}`] ?? 0)));

/** Most demand held at once: a sweep over the runs' start and end times (an end before a start
 * at the same instant: the start script admits a run only once the slots are given back). */
function admittedDemand(times: readonly RunTimes[]): number {
  const events = times.flatMap((t) => [
    { at: t.startedMs, delta: t.demand },
    { at: t.endedMs, delta: -t.demand },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let held = 0;
  let most = 0;
  for (const event of events) {
    held += event.delta;
    most = Math.max(most, held);
  }
  return most;
}

/** Tokens each run was served while the first wave (the runs started before any ended) all ran,
 * against an equal weight each: the largest |share × runs − 1|. */
function share(times: readonly RunTimes[], fleet: FleetStats): { runs: number; deviation: number } {
  const firstEnd = Math.min(...times.map((t) => t.endedMs));
  const wave = times.filter((t) => t.startedMs < firstEnd);
  const from = Math.max(...wave.map((t) => t.startedMs));
  const tokens = new Map(wave.map((t) => [t.id, 0]));
  for (const [run, count, at] of fleet.served) {
    if (at >= from && at <= firstEnd && tokens.has(run)) tokens.set(run, tokens.get(run)! + count);
  }
  const total = [...tokens.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return { runs: wave.length, deviation: NaN };
  const deviation = Math.max(
    ...[...tokens.values()].map((count) => Math.abs((count / total) * wave.length - 1)),
  );
  return { runs: wave.length, deviation };
}

export function fleetRow(input: {
  mode: FleetRow['mode'];
  k: number;
  traces: readonly RunTrace[];
  failures: string[];
  times: readonly RunTimes[];
  fleet: FleetStats;
  soloTokensPerSecond: number | undefined;
}): FleetRow {
  const { mode, k, traces, failures, times, fleet, soloTokensPerSecond } = input;
  const ids = new Set(times.map((t) => t.id));
  const [firstMs, lastMs] = [
    Math.min(...times.map((t) => t.createdMs)),
    Math.max(...times.map((t) => t.endedMs)),
  ];
  // The runs' own adapters, and the shared references (keyed by reference id: a tenant's runs
  // share one, so its tokens are the round's, not one run's) served while the round ran.
  const tokens = fleet.served
    .filter(
      ([run, , at]) => ids.has(run) || (run.startsWith('ref-') && at >= firstMs && at <= lastMs),
    )
    .reduce((sum, [, count]) => sum + count, 0);
  const makespanS = (lastMs - firstMs) / 1000;
  const tokensPerSecond = tokens / makespanS;
  const steps = traces.map(stepSeconds);
  const { runs: shareRuns, deviation: shareDeviation } = share(times, fleet);
  const waits = times.map((t) => (t.startedMs - t.createdMs) / 1000);
  const delays = times
    .filter((t) => t.startedMs - t.createdMs > 1000)
    .flatMap((t) => {
      const freed = times.filter((o) => o !== t && o.endedMs <= t.startedMs).map((o) => o.endedMs);
      return freed.length === 0 ? [] : [(t.startedMs - Math.max(...freed)) / 1000];
    });
  return {
    mode,
    k,
    finished: traces.length,
    failures,
    makespanS,
    tokens,
    tokensPerSecond,
    ofKSolo: soloTokensPerSecond && tokensPerSecond / (k * soloTokensPerSecond),
    stepS: median(steps),
    stepMaxS: Math.max(...steps),
    rolloutS: phase(traces, 'rollout'),
    trainS: phase(traces, 'train'),
    shareRuns,
    shareDeviation,
    peakListed: Math.max(...fleet.peakListed),
    admittedDemand: admittedDemand(times),
    peakPerRun: Math.max(0, ...[...ids].map((id) => fleet.peakPerRun[id] ?? 0)),
    demand: Math.max(...times.map((t) => t.demand)),
    leaked: fleet.listed.reduce((sum, names) => sum + names.length, 0),
    crossServed: fleet.crossServed,
    reads: fleet.reads,
    evictions: fleet.evictions,
    stalledS: fleet.stalledMs / 1000,
    failedUnloads: fleet.failedUnloads,
    peakBatch: fleet.peakBatch,
    waited: waits.filter((w) => w > 1).length,
    waitMaxS: Math.max(...waits),
    startDelayMaxS: delays.length === 0 ? undefined : Math.max(...delays),
  };
}

const COLUMNS: Array<[string, (r: FleetRow) => string]> = [
  ['mode', (r) => r.mode],
  ['K', (r) => String(r.k)],
  ['done', (r) => `${r.finished}/${r.k}`],
  ['makespan', (r) => `${r.makespanS.toFixed(1)} s`],
  ['tokens/s', (r) => r.tokensPerSecond.toFixed(0)],
  ['÷ K×solo', (r) => (r.ofKSolo === undefined ? '—' : r.ofKSolo.toFixed(2))],
  ['step (med/max)', (r) => `${r.stepS.toFixed(2)}/${r.stepMaxS.toFixed(2)} s`],
  ['rollout', (r) => `${r.rolloutS.toFixed(2)} s`],
  ['train', (r) => `${r.trainS.toFixed(2)} s`],
  [
    'share ±',
    (r) =>
      Number.isNaN(r.shareDeviation)
        ? '—'
        : `${(r.shareDeviation * 100).toFixed(1)} % (${r.shareRuns})`,
  ],
  ['listed/admitted', (r) => `${r.peakListed}/${r.admittedDemand}`],
  ['run/demand', (r) => `${r.peakPerRun}/${r.demand}`],
  ['leaked', (r) => String(r.leaked)],
  ['cross', (r) => String(r.crossServed)],
  ['reads', (r) => String(r.reads)],
  ['evicted', (r) => String(r.evictions)],
  ['stalled', (r) => `${r.stalledS.toFixed(2)} s`],
  ['unload 500', (r) => String(r.failedUnloads)],
  ['batch', (r) => String(r.peakBatch)],
  ['waited', (r) => String(r.waited)],
  ['wait max', (r) => `${r.waitMaxS.toFixed(1)} s`],
  [
    'start after free',
    (r) => (r.startDelayMaxS === undefined ? '—' : `${r.startDelayMaxS.toFixed(2)} s`),
  ],
];

/** Prints rows as a Markdown table (with its header when `header`). */
export function printRows(rows: readonly FleetRow[], header: boolean): void {
  const line = (cells: string[]) => console.log(`| ${cells.join(' | ')} |`);
  if (header) {
    line(COLUMNS.map(([name]) => name));
    line(COLUMNS.map(() => '---'));
  }
  for (const row of rows) {
    line(COLUMNS.map(([, cell]) => cell(row)));
    for (const failure of row.failures) console.log(`  failed: ${failure}`);
  }
}

/** `--soak`: every run finishes, no leaked name, no cross-served request, never more names
 * listed than the demand admitted at once nor more for one run than its demand. */
export function soakVerdicts(rows: readonly FleetRow[]): boolean {
  let ok = true;
  const check = (label: string, met: boolean, detail: string) => {
    console.log(`${label.padEnd(60)}${met ? 'MET' : 'MISSED'} (${detail})`);
    ok &&= met;
  };
  for (const r of rows) {
    const at = `${r.mode} K=${r.k}`;
    check(`${at}: every run finishes`, r.finished === r.k, `${r.finished}/${r.k}`);
    check(`${at}: 0 leaked names`, r.leaked === 0, String(r.leaked));
    check(`${at}: 0 cross-served requests`, r.crossServed === 0, String(r.crossServed));
    check(
      `${at}: names listed ≤ demand admitted at once`,
      r.peakListed <= r.admittedDemand,
      `${r.peakListed} ≤ ${r.admittedDemand}`,
    );
    check(
      `${at}: one run's names ≤ its demand`,
      r.peakPerRun <= r.demand,
      `${r.peakPerRun} ≤ ${r.demand}`,
    );
  }
  return ok;
}

/** `--weights`: one run's tokens in the contended window against its weight. */
export interface WeightedShare {
  runId: string;
  weight: number;
  /** Tokens served to the run in the window, its share of the window's tokens, and the share
   * its weight is due (weight ÷ the sum of the runs' weights). */
  tokens: number;
  share: number;
  expected: number;
  /** Over the whole run, from its record's `fleetShare` (the worker's count): its share of the
   * endpoint's tokens and the seconds it waited for a lease. */
  runTokenShare: number | undefined;
  waitedS: number | undefined;
}

type Interval = [number, number];

/** Sorted, disjoint union of intervals. */
function union(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  const out: Interval[] = [];
  for (const [from, to] of sorted) {
    const last = out[out.length - 1];
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else out.push([from, to]);
  }
  return out;
}

/** Intersection of two sorted, disjoint unions. */
function intersect(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const from = Math.max(a[i]![0], b[j]![0]);
    const to = Math.min(a[i]![1], b[j]![1]);
    if (from < to) out.push([from, to]);
    if (a[i]![1] < b[j]![1]) i++;
    else j++;
  }
  return out;
}

/** The contended window: the instants at which every run had a completion at the fake (arrived,
 * not yet answered), in epoch ms. Under a fair share a run that wants capacity always has one
 * (a run holding nothing may always take one request); a run between rollouts has none. */
export function contendedWindow(
  runIds: readonly string[],
  served: FleetStats['served'],
): Interval[] {
  return runIds
    .map((id) =>
      union(
        served.filter(([run]) => run === id).map(([, , at, arrived]): Interval => [arrived, at]),
      ),
    )
    .reduce((a, b) => intersect(a, b));
}

/** Each run's tokens generated inside the window: a completion's tokens spread evenly over its
 * time at the fake, counted by the part of that time inside the window. */
export function weightedShares(
  runs: ReadonlyArray<{ runId: string; weight: number; record: Record<string, unknown> }>,
  served: FleetStats['served'],
  window: readonly Interval[],
): WeightedShare[] {
  const tokens = new Map(runs.map((r) => [r.runId, 0]));
  for (const [run, count, at, arrived] of served) {
    if (!tokens.has(run) || at <= arrived) continue;
    const inside = intersect(window, [[arrived, at]]).reduce((sum, [f, t]) => sum + t - f, 0);
    tokens.set(run, tokens.get(run)! + (count * inside) / (at - arrived));
  }
  const total = [...tokens.values()].reduce((a, b) => a + b, 0);
  const weights = runs.reduce((a, r) => a + r.weight, 0);
  return runs.map((r) => {
    const endpoints = Object.values(
      (r.record['fleetShare'] ?? {}) as Record<
        string,
        { tokenShare?: number; waitedSeconds?: number }
      >,
    );
    return {
      runId: r.runId,
      weight: r.weight,
      tokens: Math.round(tokens.get(r.runId)!),
      share: total === 0 ? NaN : tokens.get(r.runId)! / total,
      expected: r.weight / weights,
      runTokenShare: endpoints[0]?.tokenShare,
      waitedS: endpoints[0]?.waitedSeconds,
    };
  });
}

/** Prints the `--weights` table; true when every run's share is within ±`tolerance` (relative)
 * of its expected share. */
export function printWeightedShares(rows: readonly WeightedShare[], tolerance: number): boolean {
  const line = (cells: string[]) => console.log(`| ${cells.join(' | ')} |`);
  line([
    'run',
    'weight',
    'tokens in window',
    'share',
    'expected',
    'off',
    `±${tolerance * 100} %`,
    'whole-run share (record)',
    'waited (record)',
  ]);
  line(Array.from({ length: 9 }, () => '---'));
  let ok = true;
  for (const r of rows) {
    const off = r.share / r.expected - 1;
    const met = Math.abs(off) <= tolerance;
    ok &&= met;
    line([
      r.runId,
      String(r.weight),
      String(r.tokens),
      `${(r.share * 100).toFixed(1)} %`,
      `${(r.expected * 100).toFixed(1)} %`,
      `${off >= 0 ? '+' : ''}${(off * 100).toFixed(1)} %`,
      met ? 'MET' : 'MISSED',
      r.runTokenShare === undefined ? '—' : `${(r.runTokenShare * 100).toFixed(1)} %`,
      r.waitedS === undefined ? '—' : `${r.waitedS.toFixed(1)} s`,
    ]);
  }
  return ok;
}
