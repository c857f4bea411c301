// Command-line flags of the fleet bench, parsed once: `--name=value`, defaults sized to stay well
// under two minutes on a 2-core machine.
export interface Flags {
  /** Runs per burst. */
  runs: number;
  /** Worker processes (the first fleet: one worker each). */
  workers: number;
  /** Run slots per worker (BullMQ concurrency). */
  slots: number;
  /** Workers of the second fleet, spread over the same number of processes. */
  fleet: number;
  /** Seconds of each idle window. */
  idleSeconds: number;
  /** POST /v1/runs requests in flight. */
  inFlight: number;
  /** Use this Redis (unique key prefix) instead of a private redis-server. */
  redisUrl: string | undefined;
  /** Write V8 CPU profiles of the control plane and worker processes here. */
  cpuProfDir: string | undefined;
}

const DEFAULTS: Flags = {
  runs: 1000,
  workers: 10,
  slots: 4,
  fleet: 100,
  idleSeconds: 10,
  inFlight: 32,
  redisUrl: undefined,
  cpuProfDir: undefined,
};

type TextFlag = 'redisUrl' | 'cpuProfDir';
type NumericFlag = Exclude<keyof Flags, TextFlag>;

const NAMES: Record<string, NumericFlag | TextFlag> = {
  runs: 'runs',
  workers: 'workers',
  slots: 'slots',
  fleet: 'fleet',
  'idle-seconds': 'idleSeconds',
  'in-flight': 'inFlight',
  'redis-url': 'redisUrl',
  'cpu-prof-dir': 'cpuProfDir',
};

export function parseFlags(argv: readonly string[]): Flags {
  const flags: Flags = { ...DEFAULTS };
  for (const arg of argv) {
    const match = /^--([a-z-]+)=(.+)$/.exec(arg);
    const key = match && NAMES[match[1] ?? ''];
    if (!match || !key) {
      throw new Error(
        `fleet bench: unknown argument '${arg}' (flags: ${Object.keys(NAMES)
          .map((n) => `--${n}=…`)
          .join(' ')})`,
      );
    }
    const value = match[2] ?? '';
    if (key === 'redisUrl' || key === 'cpuProfDir') {
      flags[key] = value;
      continue;
    }
    const n = Number(value);
    if (!(n > 0) || (key !== 'idleSeconds' && !Number.isInteger(n))) {
      throw new Error(
        `fleet bench: --${match[1]} must be a positive ${key === 'idleSeconds' ? 'number' : 'integer'}, got '${value}'`,
      );
    }
    flags[key] = n;
  }
  if (flags.fleet % flags.workers !== 0) {
    throw new Error(
      `fleet bench: --fleet (${flags.fleet}) must be a multiple of --workers (${flags.workers})`,
    );
  }
  return flags;
}
