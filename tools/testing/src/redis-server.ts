// A throwaway redis-server for tests and benches: its own free port and data directory, started
// with the caller's arguments, ready once it answers PING (not merely listening: it answers
// LOADING while it replays an append-only file), and stopped (or killed and started again on the
// same port and directory, for fault tests). A process that exits without stopping it kills it.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './free-port.ts';

/** The redis-server binary on PATH, or null (callers then say what to install). */
export function redisServerBinary(): string | null {
  const found = spawnSync('which', ['redis-server'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

export interface RedisServerOptions {
  /** Default: `redis-server` from PATH. */
  binary?: string;
  /** After `--port P --bind 127.0.0.1 --dir D --save ''` (e.g. `--appendonly yes`). */
  args?: readonly string[];
  /** How long to wait for PING to answer PONG; default 20 s. */
  readyTimeoutMs?: number;
}

export interface RedisServer {
  url: string;
  port: number;
  dir: string;
  /** kill -9: no shutdown save; only an append-only file keeps what was written. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (replays its append-only file, if any). */
  start(): Promise<void>;
  /** SIGSTOP: it stops reading and answering, its connections stay open (a replica falls
   * behind, a primary hangs). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** SIGTERM, waits for it to exit, removes its directory. Idempotent. */
  stop(): Promise<void>;
}

/** One PING over a raw socket: true on +PONG, false on anything else (refused, LOADING, …). */
function pingOnce(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/** Waits until the server on `port` answers PING; throws after `timeoutMs` or once `alive()` says it exited. */
export async function waitForPing(
  port: number,
  timeoutMs: number,
  alive: () => boolean = () => true,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!alive()) throw new Error(`redis-server on port ${port} exited before answering PING`);
    if (await pingOnce(port)) return;
    if (Date.now() > deadline)
      throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

async function end(c: ChildProcess | null, signal: NodeJS.Signals): Promise<void> {
  if (!c || exited(c)) return;
  const gone = new Promise((resolve) => c.once('exit', resolve));
  c.kill(signal);
  await gone;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = options.binary ?? 'redis-server';
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    ...(options.args ?? []),
  ];
  let child: ChildProcess | null = null;
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-16_384));
  const orphan = () => child?.kill('SIGKILL');
  process.on('exit', orphan);

  const start = async () => {
    const c = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    c.stdout?.on('data', keep);
    c.stderr?.on('data', keep);
    c.once('error', (error) => keep(Buffer.from(String(error))));
    child = c;
    await waitForPing(port, readyTimeoutMs, () => !exited(c)).catch(async (error: unknown) => {
      await end(c, 'SIGKILL');
      throw new Error(`${(error as Error).message}\n${output}`);
    });
  };
  const kill = async () => {
    const c = child;
    child = null;
    await end(c, 'SIGKILL');
  };
  const signal = (name: 'SIGSTOP' | 'SIGCONT') => {
    const c = child as ChildProcess | null;
    if (!c || exited(c)) throw new Error(`redis-server on port ${port} is not running`);
    c.kill(name);
  };
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const c = child;
    child = null;
    if (c && !exited(c)) c.kill('SIGCONT'); // a paused server cannot act on SIGTERM
    await end(c, 'SIGTERM');
    process.off('exit', orphan);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await start();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    kill,
    start,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    stop,
  };
}
