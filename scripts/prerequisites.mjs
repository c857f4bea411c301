// What `npm test`, `npm run soak`, `npm run demo` and `npm run bench` need from the machine besides npm
// packages, checked before anything is installed, built or run: every missing piece is listed
// in one message with how to get it, instead of the suite failing minutes in, one at a time.
// Node built-ins only: this runs before dependencies are installed.
import { spawnSync } from 'node:child_process';
import { canConnect } from './redis.mjs';

const MIN_NODE = [20, 19];

const HOW_TO = {
  node: 'install Node.js 20.19 or newer (https://nodejs.org, or `nvm install 24`)',
  redis:
    'set REDIS_URL to a reachable Redis, start one on 127.0.0.1:6379, or install redis-server ' +
    '(apt-get install -y redis-server | brew install redis | docker compose up -d redis)',
  prometheus:
    'apt-get install -y prometheus | brew install prometheus | a release from ' +
    'https://prometheus.io/download/ with PROMETHEUS_BIN=/path/to/prometheus',
  promtool:
    'ships with Prometheus: apt-get install -y prometheus | brew install prometheus | a release ' +
    'from https://prometheus.io/download/ with PROMTOOL_BIN=/path/to/promtool',
  'rsvg-convert': 'apt-get install -y librsvg2-bin | brew install librsvg',
  chromium:
    'apt-get install -y chromium | brew install --cask chromium | any Chrome or Chromium with ' +
    'CHROMIUM_BIN=/path/to/chrome',
};

/** Whether `program --version` runs (a path or a name looked up on PATH). */
function runs(program, env) {
  const probe = spawnSync(program, ['--version'], { stdio: 'ignore', env, timeout: 10_000 });
  return !probe.error && probe.status === 0;
}

function redisTarget(url) {
  try {
    const parsed = new URL(url);
    return { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 6379) };
  } catch {
    return null;
  }
}

async function checkRedis(env) {
  if (env.REDIS_URL) {
    const target = redisTarget(env.REDIS_URL);
    if (target && (await canConnect(target.port, target.host, 1_000))) return null;
    return { what: `Redis at REDIS_URL=${env.REDIS_URL} (not reachable)`, how: HOW_TO.redis };
  }
  if (await canConnect(6379)) return null;
  if (runs('redis-server', env)) return null;
  return {
    what: 'Redis (REDIS_URL unset, nothing on 127.0.0.1:6379, no redis-server)',
    how: HOW_TO.redis,
  };
}

/** override: the environment variable naming another copy of the program, or null. */
function checkProgram(name, override, env) {
  const custom = override ? env[override] : undefined;
  const program = custom || name;
  if (runs(program, env)) return null;
  const where = custom ? `${override}=${custom}` : `${name} on PATH`;
  return { what: `${name} (${where} does not run)`, how: HOW_TO[name] };
}

function checkNode(version = process.versions.node) {
  const [major, minor] = version.split('.').map(Number);
  const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
  return ok
    ? null
    : { what: `Node.js >= ${MIN_NODE.join('.')} (this is ${version})`, how: HOW_TO.node };
}

/**
 * Programs each task needs. The test suite drives a real Prometheus and promtool (infra),
 * renders the eval chart SVG with rsvg-convert (control plane's results route) and opens the web
 * console in a headless Chromium (control plane's console tests).
 */
const NEEDS = {
  test: ['node', 'redis', 'prometheus', 'promtool', 'rsvg-convert', 'chromium'],
  demo: ['node', 'redis'],
  bench: ['node', 'redis'],
  soak: ['node', 'redis'],
};

/** @returns {Promise<{what: string, how: string}[]>} everything task needs that is missing */
export async function missingPrerequisites(task, env = process.env) {
  const checks = {
    node: () => checkNode(),
    redis: () => checkRedis(env),
    prometheus: () => checkProgram('prometheus', 'PROMETHEUS_BIN', env),
    promtool: () => checkProgram('promtool', 'PROMTOOL_BIN', env),
    'rsvg-convert': () => checkProgram('rsvg-convert', null, env),
    chromium: () => checkProgram('chromium', 'CHROMIUM_BIN', env),
  };
  const results = await Promise.all((NEEDS[task] ?? []).map((need) => checks[need]()));
  return results.filter((missing) => missing !== null);
}

/** The one message listing everything missing. */
export function describeMissing(task, missing) {
  const lines = missing.map((m) => `  - ${m.what}\n      get it: ${m.how}`);
  return (
    `anneal: \`npm ${task === 'test' ? 'test' : `run ${task}`}\` needs ${missing.length} more ` +
    `thing${missing.length === 1 ? '' : 's'} on this machine:\n${lines.join('\n')}\n` +
    'Nothing was installed, built or run. (.ci/run installs them on Debian/Ubuntu.)'
  );
}
