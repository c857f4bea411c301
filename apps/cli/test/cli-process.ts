// Spawns the real CLI (`node apps/cli/bin/anneal.js …`): one-shot commands and long-running
// servers (control-plane, up) whose output is watched for a line.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function anneal(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['apps/cli/bin/anneal.js', ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end();
  });
}

export interface Server {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts a long-running command and waits until `ready` matches its stdout or stderr. */
export function startServer(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 30_000,
): Promise<{ server: Server; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, ['apps/cli/bin/anneal.js', ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  const server: Server = {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  return new Promise((done, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`not ready after ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    const check = () => {
      const match = stdout.match(ready) ?? stderr.match(ready);
      if (match) {
        clearTimeout(timer);
        done({ server, match });
      }
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      check();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      check();
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      fail(new Error(`exited with ${code} before ready\nstdout: ${stdout}\nstderr: ${stderr}`));
    });
  });
}
