// Finds a Redis for the tests/demo: REDIS_URL, else a listening local Redis on 6379,
// else a throwaway redis-server from PATH on a free port. Node built-ins only: this
// runs before dependencies are installed.
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';

const HOW_TO_GET =
  'No Redis found: set REDIS_URL, or install one (apt-get install -y redis-server | brew install redis | docker compose up -d redis).';

export function canConnect(port, host = '127.0.0.1', timeoutMs = 500) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitFor(port, deadlineMs) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (await canConnect(port)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** @returns {Promise<{url: string, stop: () => void, source: string}>} */
export async function ensureRedis(env = process.env) {
  if (env.REDIS_URL) return { url: env.REDIS_URL, stop: () => {}, source: 'REDIS_URL' };
  if (await canConnect(6379)) {
    return { url: 'redis://127.0.0.1:6379', stop: () => {}, source: 'local redis on 6379' };
  }
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    throw new Error(HOW_TO_GET);
  }
  const port = await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
    ],
    { stdio: 'ignore' },
  );
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stop);
  if (!(await waitFor(port, 10_000))) {
    stop();
    throw new Error(`redis-server did not start listening on port ${port}`);
  }
  return { url: `redis://127.0.0.1:${port}`, stop, source: `redis-server started on port ${port}` };
}
