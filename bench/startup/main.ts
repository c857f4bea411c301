// Start-up bench: how long the `anneal` command takes to do something small, against a bare
// `node -e 0` measured in the same run (ratios stay comparable between a loaded laptop and CI).
// Target: `anneal --help` and `anneal runs ls` within 3× of `node -e 0`.
//
// `runs ls` talks to a real control plane (bench/api/servers.ts: buildApp on Redis, one
// submitted run), so its time is start-up plus one authenticated HTTP round trip and the table
// printing — what a user waits for — not a connection-refused shortcut.
//
// The same commands through tsx on the TypeScript sources (what the bin ran before the build
// existed, and still runs when dist/ is stale) are timed alongside for comparison; they carry
// no target. Needs the build (`npm run bench` builds first; alone: `npm run build`, then
// `npx tsx --conditions=@anneal/source startup/main.ts` from bench/).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { median, ratio, row } from './report.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = 'apps/cli/bin/anneal.js';
const BUNDLE = 'apps/cli/dist/bundle/anneal.js';
const ROUNDS = Number(process.argv[2] ?? 11);
const TARGET = 3;

interface Candidate {
  name: string;
  args: string[];
  target: boolean;
}

interface ControlPlane {
  url: string;
  token: string;
  child: ChildProcess;
}

function startControlPlane(): Promise<ControlPlane> {
  const script = fileURLToPath(new URL('../api/servers.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=@anneal/source', '--import', 'tsx', script],
    { stdio: ['ignore', 'pipe', 'inherit'], env: process.env },
  );
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const newline = buffer.indexOf('\n');
      if (newline < 0) return;
      const { controlUrl, token } = JSON.parse(buffer.slice(0, newline)) as {
        controlUrl: string;
        token: string;
      };
      resolve({ url: controlUrl, token, child });
    });
    child.once('close', (code) => reject(new Error(`bench servers exited (${code}) before ready`)));
  });
}

/** Wall-clock milliseconds of one run; throws with its output when the command fails. */
function timeOnce(candidate: Candidate, env: NodeJS.ProcessEnv): number {
  const started = process.hrtime.bigint();
  const run = spawnSync(process.execPath, candidate.args, { cwd: ROOT, env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (run.status !== 0) {
    throw new Error(`${candidate.name} exited ${run.status}:\n${run.stdout}${run.stderr}`);
  }
  return ms;
}

if (!existsSync(new URL(BUNDLE, `file://${ROOT}`))) {
  console.error(`startup bench: ${BUNDLE} is missing; run \`npm run build\` first`);
  process.exit(1);
}

const sources = ['--conditions=@anneal/source', '--import', 'tsx', 'apps/cli/src/main.ts'];
const candidates: Candidate[] = [
  { name: 'node -e 0', args: ['-e', '0'], target: false },
  { name: 'anneal --help', args: [BIN, '--help'], target: true },
  { name: 'anneal runs ls', args: [BIN, 'runs', 'ls'], target: true },
  { name: 'tsx: anneal --help', args: [...sources, '--help'], target: false },
  { name: 'tsx: anneal runs ls', args: [...sources, 'runs', 'ls'], target: false },
];

const plane = await startControlPlane();
try {
  // ANNEAL_REQUIRE_BUILD: the bin fails instead of silently timing tsx on a stale dist/.
  // Without what every node start would add alike: NODE_EXTRA_CA_CERTS alone costs a start
  // ≈ 60 ms here (the certificates are read and parsed), which inflated `node -e 0` and hid the
  // commands' own cost in the ratios (3.4× read as 2.0×); NODE_OPTIONS may preload anything.
  const { NODE_EXTRA_CA_CERTS: _certs, NODE_OPTIONS: _options, ...inherited } = process.env;
  const env = {
    ...inherited,
    ANNEAL_URL: plane.url,
    ANNEAL_TOKEN: plane.token,
    ANNEAL_REQUIRE_BUILD: '1',
  };
  for (const c of candidates) timeOnce(c, env); // warm the file cache and tsx's cache
  const samples = new Map(candidates.map((c) => [c.name, [] as number[]]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of candidates) samples.get(c.name)!.push(timeOnce(c, env));
  }
  const baseline = median(samples.get('node -e 0')!);
  console.log(`anneal start-up, median of ${ROUNDS} interleaved runs (wall clock)\n`);
  console.log(row(['command', 'median ms', '× node -e 0', 'target']));
  let missed = 0;
  for (const c of candidates) {
    const ms = median(samples.get(c.name)!);
    const times = ratio(ms, baseline);
    const verdict = c.target ? (times <= TARGET ? `MET ≤${TARGET}×` : `MISSED ≤${TARGET}×`) : '';
    if (c.target && times > TARGET) missed++;
    console.log(row([c.name, ms.toFixed(0), times.toFixed(2), verdict]));
  }
  console.log(
    missed === 0 ? '\nall start-up targets met' : `\n${missed} start-up target(s) missed`,
  );
} finally {
  plane.child.kill('SIGTERM');
}
