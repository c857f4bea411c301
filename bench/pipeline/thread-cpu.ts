// This process's CPU time split by thread, from Linux's /proc/self/task/<tid>/stat (utime and
// stime, in clock ticks of 10 ms): the main thread (the event loop) apart from the others (V8's
// collector helpers, libuv's pool — the ledger's gzip — and any worker threads). Node names all
// its threads "node", so they are told apart only by the main thread's id being the process's.
// Elsewhere than Linux: undefined.
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10;

export interface ThreadCpu {
  mainUserMs: number;
  mainSystemMs: number;
  /** Every other thread's user + system time. */
  otherMs: number;
}

/** user and system ms of one thread; a thread that ended in between reads as none. */
function ticks(tid: string): [number, number] {
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  } catch {
    return [0, 0];
  }
  // fields after the command name (in parentheses, which may hold spaces): state is field 3,
  // utime 14, stime 15
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [Number(fields[11]) * TICK_MS, Number(fields[12]) * TICK_MS];
}

export function threadCpu(): ThreadCpu | undefined {
  if (process.platform !== 'linux') return undefined;
  const main = String(process.pid);
  const result: ThreadCpu = { mainUserMs: 0, mainSystemMs: 0, otherMs: 0 };
  for (const tid of readdirSync('/proc/self/task')) {
    const [user, system] = ticks(tid);
    if (tid === main) {
      result.mainUserMs = user;
      result.mainSystemMs = system;
    } else result.otherMs += user + system;
  }
  return result;
}
