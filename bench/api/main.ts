// API bench: autocannon on loopback against the control plane's GET /v1/runs/{id} and
// POST /v1/runs, each next to a bare Fastify route measured in the same run as the baseline.
// Targets: GET throughput >= 50% of the bare route; POST p99 <= 20 ms at 200 req/s.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import { SPEC_BODY, formatRow, ratio } from './report.ts';

interface Servers {
  controlUrl: string;
  bareUrl: string;
  token: string;
  runId: string;
}

function startServers(): Promise<{ servers: Servers; stop: () => Promise<void> }> {
  const script = fileURLToPath(new URL('./servers.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=@anneal/source', '--import', 'tsx', script],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    },
  );
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const newline = buffer.indexOf('\n');
      if (newline < 0) return;
      const servers = JSON.parse(buffer.slice(0, newline)) as Servers;
      resolve({
        servers,
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

const { servers, stop } = await startServers();
try {
  const auth = { authorization: `Bearer ${servers.token}` };
  const json = { 'content-type': 'application/json' };
  const getControl = `${servers.controlUrl}/v1/runs/${servers.runId}`;
  const getBare = `${servers.bareUrl}/bare/runs/${servers.runId}`;

  // Warm-up (JIT, connection pools), then GET interleaved bare/control twice; means of the two.
  await load(getBare, { duration: 2 });
  await load(getControl, { duration: 2, headers: auth });
  const getRuns: Record<'bare' | 'control', Result[]> = { bare: [], control: [] };
  for (let round = 0; round < 2; round++) {
    getRuns.bare.push(await load(getBare, { duration: 5 }));
    getRuns.control.push(await load(getControl, { duration: 5, headers: auth }));
  }
  const postBare = await load(`${servers.bareUrl}/bare/runs`, {
    method: 'POST',
    body: SPEC_BODY,
    headers: json,
    duration: 8,
    rate: 200,
  });
  const postControl = await load(`${servers.controlUrl}/v1/runs`, {
    method: 'POST',
    body: SPEC_BODY,
    headers: { ...auth, ...json },
    duration: 8,
    rate: 200,
  });
  for (const [name, results] of Object.entries(getRuns))
    results.forEach((r) => checkClean(`GET ${name}`, r));
  checkClean('POST bare', postBare);
  checkClean('POST control', postControl);

  const mean = (results: Result[], pick: (r: Result) => number) =>
    results.reduce((sum, r) => sum + pick(r), 0) / results.length;
  const getBareRps = mean(getRuns.bare, (r) => r.requests.average);
  const getControlRps = mean(getRuns.control, (r) => r.requests.average);
  const getRatio = ratio(getControlRps, getBareRps);

  console.log('API bench (loopback, 10 connections; GET: 2 × 5 s each, POST: 8 s at 200 req/s)');
  console.log(formatRow(['route', 'req/s', 'p50 ms', 'p99 ms']));
  console.log(
    formatRow([
      'GET bare',
      getBareRps.toFixed(0),
      mean(getRuns.bare, (r) => r.latency.p50).toFixed(2),
      mean(getRuns.bare, (r) => r.latency.p99).toFixed(2),
    ]),
  );
  console.log(
    formatRow([
      'GET /v1/runs/{id}',
      getControlRps.toFixed(0),
      mean(getRuns.control, (r) => r.latency.p50).toFixed(2),
      mean(getRuns.control, (r) => r.latency.p99).toFixed(2),
    ]),
  );
  console.log(
    formatRow([
      'POST bare',
      postBare.requests.average.toFixed(0),
      postBare.latency.p50.toFixed(2),
      postBare.latency.p99.toFixed(2),
    ]),
  );
  console.log(
    formatRow([
      'POST /v1/runs',
      postControl.requests.average.toFixed(0),
      postControl.latency.p50.toFixed(2),
      postControl.latency.p99.toFixed(2),
    ]),
  );
  const getOk = getRatio >= 0.5;
  const postOk = postControl.latency.p99 <= 20;
  console.log(
    `GET throughput vs bare: ${(getRatio * 100).toFixed(1)}% (target >= 50%) ${getOk ? 'MET' : 'MISSED'}`,
  );
  console.log(
    `POST p99 at 200 req/s: ${postControl.latency.p99.toFixed(2)} ms (target <= 20 ms; bare ${postBare.latency.p99.toFixed(2)} ms, ratio ${ratio(postControl.latency.p99, postBare.latency.p99).toFixed(2)}x) ${postOk ? 'MET' : 'MISSED'}`,
  );
  // Targets are reported, not enforced: a benchmark measures; it is not a timed test.
} finally {
  await stop();
}
