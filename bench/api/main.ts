// API bench: autocannon on loopback against the control plane's GET /v1/runs/{id} and
// POST /v1/runs, each next to a bare Fastify route measured in the same run as the baseline.
// Targets: GET throughput >= 50% of the bare route; POST p99 <= 20 ms at 200 req/s.
// `--profile`: instead of the comparison, one CPU profile of the servers' process per control-plane
// phase (GET, POST), each summarised by cpu-profile.ts; numbers under the profiler judge nothing.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import { Redis } from 'ioredis';
import { appendRunNotice, createStoreContext } from '@anneal/store';
import { formatSummary, readProfile, summarise } from './cpu-profile.ts';
import { type Sample, ask, delta } from './probe.ts';
import { SPEC_BODY, formatRow, ratio } from './report.ts';
import { type EventStream, openEventStream } from './sse.ts';

interface Servers {
  controlUrl: string;
  bareUrl: string;
  token: string;
  runId: string;
  prefix: string;
  /** Runs for the SSE phase, one stream each. */
  sseRunIds: string[];
}

interface Handle {
  servers: Servers;
  child: ChildProcess;
  stop: () => Promise<void>;
}

function startServers(): Promise<Handle> {
  const script = fileURLToPath(new URL('./servers.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=@anneal/source', '--import', 'tsx', script],
    {
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      env: process.env,
    },
  );
  const { stdout } = child;
  if (!stdout) throw new Error('bench servers: no stdout pipe');
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return new Promise((resolve, reject) => {
    let buffer = '';
    stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const newline = buffer.indexOf('\n');
      if (newline < 0) return;
      const servers = JSON.parse(buffer.slice(0, newline)) as Servers;
      resolve({
        servers,
        child,
        stop: async () => {
          child.kill('SIGTERM');
          await exited;
        },
      });
    });
    child.on('close', (code) => reject(new Error(`bench servers exited with ${code}`)));
  });
}

async function load(
  url: string,
  options: {
    method?: string;
    body?: string;
    headers?: Record<string, string>;
    duration: number;
    rate?: number;
  },
): Promise<Result> {
  return autocannon({
    url,
    connections: 10,
    pipelining: 1,
    duration: options.duration,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    ...(options.body !== undefined && { body: options.body }),
    ...(options.rate !== undefined && { overallRate: options.rate }),
  });
}

function checkClean(name: string, result: Result): void {
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  }
}

interface Targets {
  auth: Record<string, string>;
  json: Record<string, string>;
  getControl: string;
  getBare: string;
  postControl: string;
  postBare: string;
}

function targetsOf(servers: Servers): Targets {
  return {
    auth: { authorization: `Bearer ${servers.token}` },
    json: { 'content-type': 'application/json' },
    getControl: `${servers.controlUrl}/v1/runs/${servers.runId}`,
    getBare: `${servers.bareUrl}/bare/runs/${servers.runId}`,
    postControl: `${servers.controlUrl}/v1/runs`,
    postBare: `${servers.bareUrl}/bare/runs`,
  };
}

/** One load phase with the servers' counters read around it. */
interface Phase {
  result: Result;
  before: Sample;
  after: Sample;
}

async function phase(child: ChildProcess, run: () => Promise<Result>): Promise<Phase> {
  const before = await ask(child, { op: 'sample' });
  const result = await run();
  const after = await ask(child, { op: 'sample' });
  return { result, before, after };
}

/** CPU µs and Redis commands per request over several phases of one route. */
function costOf(phases: Phase[]): { cpuUs: number; commands: number; byName: string } {
  let cpuUs = 0;
  let requests = 0;
  const byName: Record<string, number> = {};
  for (const { result, before, after } of phases) {
    const cost = delta(before, after);
    cpuUs += cost.cpuUs;
    requests += result.requests.total;
    for (const [name, n] of Object.entries(cost.redisCommands))
      byName[name] = (byName[name] ?? 0) + n;
  }
  const per = (n: number) => (requests > 0 ? n / requests : Number.NaN);
  const names = Object.entries(byName).sort(([, a], [, b]) => b - a);
  return {
    cpuUs: per(cpuUs),
    commands: per(names.reduce((sum, [, n]) => sum + n, 0)),
    byName: names.map(([name, n]) => `${name} ${per(n).toFixed(2)}`).join(', ') || 'none',
  };
}

const load1 = () => loadavg()[0]?.toFixed(2) ?? '?';

async function profilePhases({ servers, child }: Handle): Promise<void> {
  const { auth, json, getControl, postControl } = targetsOf(servers);
  const dir = mkdtempSync(path.join(tmpdir(), 'anneal-api-profile-'));
  await load(getControl, { duration: 2, headers: auth }); // warm-up, not profiled
  const phases: Array<[string, string, () => Promise<Result>]> = [
    [
      'get',
      'GET /v1/runs/{id}, 5 s closed loop',
      () => load(getControl, { duration: 5, headers: auth }),
    ],
    [
      'post',
      'POST /v1/runs, 8 s at 200 req/s',
      () =>
        load(postControl, {
          method: 'POST',
          body: SPEC_BODY,
          headers: { ...auth, ...json },
          duration: 8,
          rate: 200,
        }),
    ],
  ];
  for (const [name, title, run] of phases) {
    const file = path.join(dir, `${name}.cpuprofile`);
    await ask(child, { op: 'profile-start' });
    const result = await run();
    await ask(child, { op: 'profile-stop', file });
    checkClean(title, result);
    console.log(
      `\n${title} under the profiler: ${result.requests.average.toFixed(0)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms (not a measurement; load average ${load1()})`,
    );
    console.log(formatSummary(summarise(readProfile(file)), file));
  }
}

async function compare({ servers, child }: Handle): Promise<void> {
  const { auth, json, getControl, getBare, postControl, postBare } = targetsOf(servers);
  const loadBefore = load1();

  // Warm-up (JIT, connection pools), then GET interleaved bare/control twice; means of the two.
  await load(getBare, { duration: 2 });
  await load(getControl, { duration: 2, headers: auth });
  const get: Record<'bare' | 'control', Phase[]> = { bare: [], control: [] };
  for (let round = 0; round < 2; round++) {
    get.bare.push(await phase(child, () => load(getBare, { duration: 5 })));
    get.control.push(await phase(child, () => load(getControl, { duration: 5, headers: auth })));
  }
  const post = {
    bare: await phase(child, () =>
      load(postBare, { method: 'POST', body: SPEC_BODY, headers: json, duration: 8, rate: 200 }),
    ),
    control: await phase(child, () =>
      load(postControl, {
        method: 'POST',
        body: SPEC_BODY,
        headers: { ...auth, ...json },
        duration: 8,
        rate: 200,
      }),
    ),
  };
  for (const [name, phases] of Object.entries(get))
    phases.forEach((p) => checkClean(`GET ${name}`, p.result));
  checkClean('POST bare', post.bare.result);
  checkClean('POST control', post.control.result);

  const mean = (phases: Phase[], pick: (r: Result) => number) =>
    phases.reduce((sum, p) => sum + pick(p.result), 0) / phases.length;
  const routes: Array<[string, Phase[]]> = [
    ['GET bare', get.bare],
    ['GET /v1/runs/{id}', get.control],
    ['POST bare', [post.bare]],
    ['POST /v1/runs', [post.control]],
  ];
  console.log(
    `API bench (loopback, 10 connections; GET: 2 × 5 s each, POST: 8 s at 200 req/s; load average ${loadBefore} before, ${load1()} after)`,
  );
  console.log(formatRow(['route', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'Redis/req']));
  const costs = new Map<string, ReturnType<typeof costOf>>();
  for (const [name, phases] of routes) {
    const cost = costOf(phases);
    costs.set(name, cost);
    console.log(
      formatRow([
        name,
        mean(phases, (r) => r.requests.average).toFixed(0),
        mean(phases, (r) => r.latency.p50).toFixed(2),
        mean(phases, (r) => r.latency.p99).toFixed(2),
        cost.cpuUs.toFixed(0),
        cost.commands.toFixed(2),
      ]),
    );
  }
  console.log(
    "CPU µs/req: the servers' process (user + system) over the phase, divided by the requests served.",
  );
  for (const name of ['GET /v1/runs/{id}', 'POST /v1/runs'])
    console.log(`Redis commands per request, ${name}: ${costs.get(name)?.byName}`);

  const getRatio = ratio(
    mean(get.control, (r) => r.requests.average),
    mean(get.bare, (r) => r.requests.average),
  );
  const cpuRatio = ratio(
    costs.get('GET /v1/runs/{id}')?.cpuUs ?? Number.NaN,
    costs.get('GET bare')?.cpuUs ?? Number.NaN,
  );
  const postP99 = post.control.result.latency.p99;
  const getOk = getRatio >= 0.5;
  const postOk = postP99 <= 20;
  console.log(
    `GET throughput vs bare: ${(getRatio * 100).toFixed(1)}% (target >= 50%; CPU per request ${cpuRatio.toFixed(2)}x the bare route's) ${getOk ? 'MET' : 'MISSED'}`,
  );
  console.log(
    `POST p99 at 200 req/s: ${postP99.toFixed(2)} ms (target <= 20 ms; bare ${post.bare.result.latency.p99.toFixed(2)} ms, ratio ${ratio(postP99, post.bare.result.latency.p99).toFixed(2)}x) ${postOk ? 'MET' : 'MISSED'}`,
  );
  // Targets are reported, not enforced: a benchmark measures; it is not a timed test.
}

const SSE_ROUNDS = 10;

/** SSE: what opening one stream per run costs the control plane, and what following them costs
 * per delivered event (events written straight to Redis, as workers do). No target: the figures
 * feed docs/performance.md "Extrapolating to a 64-GPU pool". */
async function followStreams({ servers, child }: Handle): Promise<void> {
  const writer = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const store = createStoreContext(writer, servers.prefix);
  let streams: EventStream[] = [];
  try {
    const beforeOpen = await ask(child, { op: 'sample' });
    streams = await Promise.all(
      servers.sseRunIds.map((id) =>
        openEventStream(`${servers.controlUrl}/v1/runs/${id}/events`, servers.token),
      ),
    );
    await Promise.all(streams.map((s) => s.waitFor(1))); // the replayed `queued` event
    const opened = delta(beforeOpen, await ask(child, { op: 'sample' }));

    const beforeFollow = await ask(child, { op: 'sample' });
    const latencies: number[] = [];
    for (let round = 1; round <= SSE_ROUNDS; round++) {
      const start = performance.now();
      await Promise.all(
        servers.sseRunIds.map((id) =>
          appendRunNotice(store, id, { code: 'bench', message: `round ${round}` }),
        ),
      );
      await Promise.all(streams.map((s) => s.waitFor(1 + round)));
      latencies.push(performance.now() - start);
    }
    const followed = delta(beforeFollow, await ask(child, { op: 'sample' }));
    const events = SSE_ROUNDS * streams.length;
    const commands = (d: Sample) => Object.values(d.redisCommands).reduce((a, b) => a + b, 0);
    const names = (d: Sample, per: number) =>
      Object.entries(d.redisCommands)
        .sort(([, a], [, b]) => b - a)
        .map(([name, n]) => `${name} ${(n / per).toFixed(2)}`)
        .join(', ');
    latencies.sort((a, b) => a - b);
    console.log(
      `SSE, ${streams.length} streams (one per run): opening: ${(opened.cpuUs / streams.length).toFixed(0)} µs CPU and ${(commands(opened) / streams.length).toFixed(2)} Redis commands per stream (${names(opened, streams.length)})`,
    );
    console.log(
      `SSE following: ${SSE_ROUNDS} rounds of one event per run: ${(followed.cpuUs / events).toFixed(0)} µs CPU and ${(commands(followed) / events).toFixed(3)} Redis commands per delivered event (${names(followed, events)}); written -> delivered on all ${streams.length} streams: median ${latencies[latencies.length >> 1]?.toFixed(1)} ms, max ${latencies.at(-1)?.toFixed(1)} ms`,
    );
  } finally {
    for (const stream of streams) stream.close();
    await writer.quit();
  }
}

const handle = await startServers();
try {
  if (process.argv.includes('--profile')) await profilePhases(handle);
  else {
    await compare(handle);
    await followStreams(handle);
  }
} finally {
  await handle.stop();
}
