// V8's sampling profiler on this process (node:inspector), and what it found: CPU time by
// function (self time) and by area of the code (each sample charged to its innermost frame in a
// repository module or a dependency, so JSON.parse or GC inside the vLLM client counts there).
import { Session } from 'node:inspector/promises';
import { sampleDurations } from '../api/cpu-profile.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** What V8's sampling heap profiler saw allocated (garbage included), as a tree of frames. */
export interface AllocationProfile {
  head: AllocationNode;
}
interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

export interface Profiles {
  cpu: CpuProfile;
  allocations?: AllocationProfile;
}

/** Starts the CPU profiler and, with `allocations`, the sampling heap profiler (every 64 KiB
 * allocated, objects a GC has since collected included: GC's share is paid for by whoever
 * allocates; it costs CPU of its own, so it is off for the headline figures). */
export async function startProfiler(allocations: boolean): Promise<() => Promise<Profiles>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  if (allocations) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 65_536,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as unknown as Parameters<Session['post']>[1]);
  }
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    const sampled = allocations
      ? ((await session.post('HeapProfiler.stopSampling')).profile as AllocationProfile)
      : undefined;
    session.disconnect();
    return { cpu: profile as CpuProfile, allocations: sampled };
  };
}

/** Bytes allocated by area of the code (innermost repository or dependency frame) and by
 * function, largest first. */
export function summariseAllocations(
  profile: AllocationProfile,
  top: number,
): { totalBytes: number; areas: Array<[string, number]>; functions: Array<[string, number]> } {
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  let totalBytes = 0;
  const visit = (node: AllocationNode, area: string | undefined) => {
    const here = areaOf(node.callFrame.url) ?? area;
    if (node.selfSize > 0) {
      totalBytes += node.selfSize;
      const key = here ?? 'node internals';
      areas.set(key, (areas.get(key) ?? 0) + node.selfSize);
      const frame = node.callFrame;
      const name = frame.functionName || '(anonymous)';
      const label = frame.url ? `${name} ${short(frame.url)}:${frame.lineNumber + 1}` : name;
      functions.set(label, (functions.get(label) ?? 0) + node.selfSize);
    }
    for (const child of node.children) visit(child, here);
  };
  visit(profile.head, undefined);
  const largest = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { totalBytes, areas: largest(areas), functions: largest(functions) };
}

const REPO = /\/(packages|apps)\/([^/]+)\/src\/(.*)$/;
const DEPENDENCY = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//;

/** An area of the code for a frame URL, or undefined for node internals and V8 builtins. */
function areaOf(url: string): string | undefined {
  const repo = REPO.exec(url);
  if (repo) {
    const dir = repo[3]!.includes('/') ? repo[3]!.slice(0, repo[3]!.indexOf('/')) : repo[3]!;
    return `${repo[1]}/${repo[2]}/${dir}`;
  }
  const dependency = DEPENDENCY.exec(url);
  return dependency ? dependency[1] : undefined;
}

const short = (url: string) => url.replace(/^.*\/(packages|apps|node_modules)\//, '$1/');

export interface ProfileSummary {
  totalMs: number;
  /** [label, ms], largest first. */
  functions: Array<[string, number]>;
  areas: Array<[string, number]>;
}

export function summarise(profile: CpuProfile, top: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<number, number>();
  // the time from Profiler.start to the first sample (≈ 95 ms here) is no sample's: until
  // 2026-12-07 it was charged to the inspector's `dispatch`
  const durations = sampleDurations(profile);
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + durations[i]! / 1000));
  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  let totalMs = 0;
  for (const [id, ms] of self) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    totalMs += ms;
    const name = frame.functionName || '(anonymous)';
    const label = frame.url ? `${name} ${short(frame.url)}:${frame.lineNumber + 1}` : name;
    functions.set(label, (functions.get(label) ?? 0) + ms);
    let area: string | undefined;
    for (
      let at: number | undefined = id;
      at !== undefined && area === undefined;
      at = parent.get(at)
    ) {
      area = areaOf(byId.get(at)!.callFrame.url);
    }
    const key =
      area ?? (frame.functionName.startsWith('(') ? frame.functionName : 'node internals');
    areas.set(key, (areas.get(key) ?? 0) + ms);
  }
  const largest = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { totalMs, functions: largest(functions), areas: largest(areas) };
}
