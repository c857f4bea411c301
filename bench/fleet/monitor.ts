// Counting what one run costs Redis, command by command: MONITOR (on a small burst of its own,
// since MONITOR slows the server) shows every command a client sends and every command a Lua
// script runs (source `lua`). Commands of the bench's own connections are left out.
import type { Redis } from 'ioredis';

export interface CommandCount {
  /** Commands clients sent (one round trip each unless pipelined). */
  sent: number;
  /** EVALSHA/EVAL among them: Anneal's and BullMQ's Lua scripts. */
  scripts: number;
  /** Commands run inside those scripts. */
  inScripts: number;
  /** Sent commands by name. */
  byCommand: Record<string, number>;
}

/** Local ports of the bench's own connections (their commands are not the system's). */
export const localPort = (client: Redis): number => client.stream.localPort ?? -1;

export async function countCommands(
  redis: Redis,
  benchPorts: ReadonlySet<number>,
  work: () => Promise<unknown>,
): Promise<CommandCount> {
  const count: CommandCount = { sent: 0, scripts: 0, inScripts: 0, byCommand: {} };
  const monitor = await redis.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') {
      count.inScripts += 1;
      return;
    }
    const port = Number(source.slice(source.lastIndexOf(':') + 1));
    if (benchPorts.has(port)) return;
    const name = (args[0] ?? '?').toLowerCase();
    count.sent += 1;
    count.byCommand[name] = (count.byCommand[name] ?? 0) + 1;
    if (name === 'evalsha' || name === 'eval') count.scripts += 1;
  });
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 200)); // the last lines in flight
  } finally {
    monitor.disconnect();
  }
  return count;
}
