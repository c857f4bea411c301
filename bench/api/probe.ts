// What the bench asks of the servers' process over the IPC channel, and how it answers: cumulative
// counters (its CPU time, the Redis commands its clients sent, by name) read before and after a
// phase, and V8's sampling profiler started and stopped around one phase (--profile).
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Redis } from 'ioredis';

export type ProbeRequest =
  { op: 'sample' } | { op: 'profile-start' } | { op: 'profile-stop'; file: string };

export interface Sample {
  /** User + system CPU time of the servers' process, µs. */
  cpuUs: number;
  /** Commands sent by every ioredis client of the process (auto-pipelined ones included). */
  redisCommands: Record<string, number>;
}

/** Sends one request to the servers' process and resolves with its answer. */
export function ask(child: ChildProcess, request: { op: 'sample' }): Promise<Sample>;
export function ask(child: ChildProcess, request: ProbeRequest): Promise<unknown>;
export function ask(child: ChildProcess, request: ProbeRequest): Promise<unknown> {
  return new Promise((resolve) => {
    child.once('message', resolve);
    child.send(request);
  });
}

/** What the servers' process did between two samples. */
export function delta(before: Sample, after: Sample): Sample {
  const redisCommands: Record<string, number> = {};
  for (const [name, count] of Object.entries(after.redisCommands)) {
    const sent = count - (before.redisCommands[name] ?? 0);
    if (sent > 0) redisCommands[name] = sent;
  }
  return { cpuUs: after.cpuUs - before.cpuUs, redisCommands };
}

/** In the servers' process: counts Redis commands (before any client is created) and answers
 * the bench's requests. */
export function serveProbe(): void {
  const counts: Record<string, number> = {};
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function counted(this: Redis, ...args) {
    const name = args[0].name;
    counts[name] = (counts[name] ?? 0) + 1;
    return send.apply(this, args);
  };
  const session = new Session();
  process.on('message', (request: ProbeRequest) => {
    void (async () => {
      let reply: unknown = { op: request.op };
      if (request.op === 'sample') {
        const cpu = process.cpuUsage();
        reply = { cpuUs: cpu.user + cpu.system, redisCommands: { ...counts } } satisfies Sample;
      } else if (request.op === 'profile-start') {
        session.connect();
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: 200 });
        await session.post('Profiler.start');
      } else {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(request.file, JSON.stringify(profile));
        session.disconnect();
      }
      process.send?.(reply);
    })();
  });
}
