// Checks what `npm test`, `npm run soak`, `npm run demo` and `npm run bench` need from the machine
// besides npm packages (the table: scripts/prerequisites-table.mjs), before anything is built or
// run: every missing piece at once, instead of the suite failing minutes in, one at a time.
// scripts/setup.mjs installs what it can and lists the rest.
// Node built-ins only: this runs before dependencies are installed.
import { spawnSync } from 'node:child_process';
import { NEEDS, PREREQUISITES } from './prerequisites-table.mjs';
import { canConnect } from './redis.mjs';

const MIN_NODE = [20, 19];
const HOW_TO = Object.fromEntries(Object.entries(PREREQUISITES).map(([id, p]) => [id, p.how]));

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
    return {
      id: 'redis',
      what: `Redis at REDIS_URL=${env.REDIS_URL} (not reachable)`,
      how: HOW_TO.redis,
    };
  }
  if (await canConnect(6379)) return null;
  if (runs('redis-server', env)) return null;
  return {
    id: 'redis',
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
  return { id: name, what: `${name} (${where} does not run)`, how: HOW_TO[name] };
}

function checkNode(version = process.versions.node) {
  const [major, minor] = version.split('.').map(Number);
  const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
  return ok
    ? null
    : {
        id: 'node',
        what: `Node.js >= ${MIN_NODE.join('.')} (this is ${version})`,
        how: HOW_TO.node,
      };
}

/** @returns {Promise<{id: string, what: string, how: string}[]>} everything task needs that is missing */
export async function missingPrerequisites(task, env = process.env) {
  const checks = {
    node: () => checkNode(),
    redis: () => checkRedis(env),
    prometheus: () => checkProgram('prometheus', 'PROMETHEUS_BIN', env),
    promtool: () => checkProgram('promtool', 'PROMTOOL_BIN', env),
    'rsvg-convert': () => checkProgram('rsvg-convert', null, env),
    chromium: () => checkProgram('chromium', 'CHROMIUM_BIN', env),
  };
  // One at a time: the program probes are synchronous, and run beside the Redis probe they
  // would block its connect past its timeout on a loaded machine (Redis read as unreachable).
  const missing = [];
  for (const need of NEEDS[task] ?? []) {
    const result = await checks[need]();
    if (result !== null) missing.push(result);
  }
  return missing;
}
