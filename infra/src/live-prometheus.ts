// Starts a real Prometheus (Debian's `prometheus` package; PROMETHEUS_BIN overrides) on a free
// loopback port with a given config, and queries it through its HTTP API. For tests that scrape
// a running stack and evaluate the shipped expressions.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '@anneal/testing';

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface LivePrometheus {
  url: string;
  /** Instant query; throws with Prometheus' error message when the query fails. */
  query(expr: string): Promise<PromSample[]>;
  /** Polls `expr` until it returns at least one sample, or throws after `timeoutMs`. */
  waitFor(expr: string, timeoutMs?: number): Promise<PromSample[]>;
  stop(): Promise<void>;
}

export function prometheusPath(): string {
  return process.env['PROMETHEUS_BIN'] ?? 'prometheus';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
  );
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export async function startPrometheus(
  config: string,
  options: { readyTimeoutMs?: number } = {},
): Promise<LivePrometheus> {
  const dir = mkdtempSync(path.join(tmpdir(), 'anneal-prometheus-'));
  const configFile = path.join(dir, 'prometheus.yml');
  writeFileSync(configFile, config);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = '';
  const child = spawn(
    prometheusPath(),
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) =>
      reject(
        new Error(
          `cannot start ${prometheusPath()} (apt-get install prometheus, or set PROMETHEUS_BIN): ${error.message}`,
        ),
      ),
    );
  });
  const stop = async () => {
    await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await spawned;
    await until('Prometheus to be ready', options.readyTimeoutMs ?? 20_000, async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}): ${log}`);
      const res = await fetch(`${url}/-/ready`);
      return res.ok ? true : undefined;
    });
  } catch (error) {
    await stop();
    throw error;
  }

  const query = async (expr: string): Promise<PromSample[]> => {
    const res = await fetch(`${url}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query: expr }),
    });
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data?: { resultType: string; result: unknown };
    };
    if (body.status !== 'success')
      throw new Error(`query failed: ${body.error ?? res.status}: ${expr}`);
    const { resultType, result } = body.data!;
    if (resultType === 'scalar') return [{ metric: {}, value: result as [number, string] }];
    return result as PromSample[];
  };
  return {
    url,
    query,
    waitFor: (expr, timeoutMs = 20_000) =>
      until(`${expr} to return data`, timeoutMs, async () => {
        const samples = await query(expr);
        return samples.length > 0 ? samples : undefined;
      }),
    stop,
  };
}
