// Reads a V8 .cpuprofile (node --cpu-prof, or the inspector's Profiler.stop) and summarises where
// the time went: self time by function, by package (node_modules package, Anneal workspace, Node
// internals, V8's own buckets), and the heaviest call path under each of the top functions.
// Usable alone on any profile: `npx tsx api/cpu-profile.ts FILE.cpuprofile [top]` from bench/.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Row {
  name: string;
  ms: number;
  share: number;
}

export interface Summary {
  /** Sampled wall time, idle included. */
  totalMs: number;
  /** Sampled time minus (idle): what the process spent on the CPU or in V8's own buckets. */
  busyMs: number;
  byFunction: Row[];
  byPackage: Row[];
  /** Packages by total time (self plus everything called from their frames). */
  packageTotal: Row[];
  /** Anneal's functions by total time (self plus everything they call). */
  annealTotal: Row[];
  /** For each of the top functions: its heaviest stack, outermost frame first. */
  paths: Array<{ name: string; ms: number; stack: string[] }>;
}

const IDLE = '(idle)';

/** "pkg" for a node_modules file, "@anneal/x" for a workspace file, "node:" for Node internals. */
export function packageOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node: internals';
  const file = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = file.slice(nm + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? file);
  }
  const workspace = /\/(packages|apps)\/([^/]+)\//.exec(file);
  if (workspace) return `@anneal/${workspace[2]}`;
  const bench = /\/bench\//.exec(file);
  return bench ? '@anneal/bench' : path.basename(file);
}

function frameName(frame: CallFrame): string {
  const fn = frame.functionName || '(anonymous)';
  if (frame.url === '') return fn;
  const file = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  const nm = file.lastIndexOf('/node_modules/');
  const short =
    nm >= 0
      ? file.slice(nm + '/node_modules/'.length)
      : file.replace(/^.*?\/(packages|apps|bench)\//, '$1/');
  // Sources run through tsx report line 0 for every function; a line is only shown when known.
  return frame.lineNumber > 0 ? `${fn} ${short}:${frame.lineNumber + 1}` : `${fn} ${short}`;
}

function rows(totals: Map<string, number>, busyMs: number, top: number): Row[] {
  return [...totals]
    .map(([name, ms]) => ({ name, ms, share: busyMs > 0 ? ms / busyMs : 0 }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top);
}

/** Microseconds each sample stands for. Sample i is taken timeDeltas[i] µs after sample i − 1
 * (the first, after startTime) and lasts until sample i + 1; the last one until endTime. The time
 * before the first sample (the profiler starting) is no sample's. */
export function sampleDurations(
  profile: Pick<CpuProfile, 'startTime' | 'endTime' | 'samples' | 'timeDeltas'>,
): number[] {
  let elapsedUs = profile.timeDeltas[0] ?? 0;
  return profile.samples.map((_, i) => {
    const us =
      profile.timeDeltas[i + 1] ?? Math.max(0, profile.endTime - profile.startTime - elapsedUs);
    elapsedUs += us;
    return us;
  });
}

export function summarise(profile: CpuProfile, top = 15): Summary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);

  // The profiler's own work (Profiler.stop serialising the profile) is left out.
  const profilerOwn = new Set<number>();
  for (const node of profile.nodes) {
    if (node.callFrame.url !== 'node:inspector') continue;
    const below = [node.id];
    for (let id = below.pop(); id !== undefined; id = below.pop()) {
      profilerOwn.add(id);
      below.push(...(byId.get(id)?.children ?? []));
    }
  }

  const selfUs = new Map<number, number>();
  let totalUs = 0;
  const durations = sampleDurations(profile);
  profile.samples.forEach((id, i) => {
    const us = durations[i]!;
    if (profilerOwn.has(id)) return;
    totalUs += us;
    selfUs.set(id, (selfUs.get(id) ?? 0) + us);
  });

  const fnMs = new Map<string, number>();
  const pkgMs = new Map<string, number>();
  const heaviestNode = new Map<string, { id: number; us: number }>();
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    if (frame.functionName === IDLE) {
      idleUs += us;
      continue;
    }
    const name = frameName(frame);
    fnMs.set(name, (fnMs.get(name) ?? 0) + us / 1000);
    const pkg = packageOf(frame);
    pkgMs.set(pkg, (pkgMs.get(pkg) ?? 0) + us / 1000);
    const best = heaviestNode.get(name);
    if (!best || best.us < us) heaviestNode.set(name, { id, us });
  }
  const busyMs = (totalUs - idleUs) / 1000;
  const byFunction = rows(fnMs, busyMs, top);

  // Total (inclusive) time of Anneal's own functions: each sample counts once for every distinct
  // Anneal function on its stack, so a handler's row includes the libraries it calls.
  // Likewise per package: ioredis's row then includes the socket writes it makes.
  const annealMs = new Map<string, number>();
  const pkgTotalMs = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    const packages = new Set<string>();
    if (byId.get(id)?.callFrame.functionName === IDLE) continue;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (!frame || frame.functionName === '(root)') continue;
      const pkg = packageOf(frame);
      packages.add(pkg);
      // The bench's own frames (its Redis command counter) would only repeat their callers' rows.
      if (pkg.startsWith('@anneal/') && pkg !== '@anneal/bench') seen.add(frameName(frame));
    }
    for (const name of seen) annealMs.set(name, (annealMs.get(name) ?? 0) + us / 1000);
    for (const pkg of packages) pkgTotalMs.set(pkg, (pkgTotalMs.get(pkg) ?? 0) + us / 1000);
  }

  const paths = byFunction.slice(0, 5).map(({ name, ms }) => {
    const stack: string[] = [];
    for (
      let id: number | undefined = heaviestNode.get(name)?.id;
      id !== undefined;
      id = parent.get(id)
    ) {
      const frame = byId.get(id)?.callFrame;
      if (frame && frame.functionName !== '(root)') stack.unshift(frameName(frame));
    }
    return { name, ms, stack };
  });
  return {
    totalMs: totalUs / 1000,
    busyMs,
    byFunction,
    byPackage: rows(pkgMs, busyMs, top),
    packageTotal: rows(pkgTotalMs, busyMs, top),
    annealTotal: rows(annealMs, busyMs, top),
    paths,
  };
}

export function formatSummary(summary: Summary, title: string): string {
  const pct = (share: number) => `${(share * 100).toFixed(1).padStart(5)}%`;
  const table = (heading: string, list: Row[]) => [
    heading,
    ...list.map((row) => `  ${row.ms.toFixed(0).padStart(7)} ms ${pct(row.share)}  ${row.name}`),
  ];
  return [
    `${title}: ${summary.totalMs.toFixed(0)} ms sampled, ${summary.busyMs.toFixed(0)} ms busy (shares below are of busy time)`,
    ...table('self time by package:', summary.byPackage),
    ...table('total time by package (with what it calls):', summary.packageTotal),
    ...table('self time by function:', summary.byFunction),
    ...table('total time of Anneal functions (with what they call):', summary.annealTotal),
    'heaviest call path of the top functions (outermost first, last 8 frames):',
    ...summary.paths.flatMap((p) => [
      `  ${p.name} (${p.ms.toFixed(0)} ms)`,
      ...p.stack.slice(-8).map((frame) => `      ${frame}`),
    ]),
  ].join('\n');
}

export function readProfile(file: string): CpuProfile {
  return JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: tsx api/cpu-profile.ts FILE.cpuprofile [top]');
    process.exit(2);
  }
  console.log(formatSummary(summarise(readProfile(file), top ? Number(top) : 15), file));
}
