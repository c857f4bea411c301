// Output a terminal can trust: every command that prints server text — reasons, names, labels,
// errors, the `runs watch` history, `runs get` — is fed hostile strings (a window-title OSC, a
// clear screen, bell, C1 CSI, U+202E) through a real `anneal control-plane`, and the bytes each
// prints are checked: no control or bidi character but the newlines between lines, the hostile
// text shown escaped (ops/terminal-text.ts), JSON still the same data.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, REDIS_URL, type Server, anneal, startServer } from './cli-process.ts';

const prefix = `{anneal-hostile-${randomUUID()}}`;
const token = `hostile-test-token-${randomUUID()}`;
const dir = mkdtempSync(join(tmpdir(), 'anneal-cli-hostile-'));
let server: Server;
let clientEnv: Record<string, string>;

/** Sets the window title, clears the screen, rings the bell, starts a C1 CSI, flips the text. */
const HOSTILE =
  '\u001b]0;pwned\u0007\u001b[2J\u001b[H\u0007cancelled by ops-oncall (operator)\u202egnp.exe\u009b31m\u2066x';
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function expectClean(result: CliResult, what: string) {
  for (const [stream, text] of [
    ['stdout', result.stdout],
    ['stderr', result.stderr],
  ] as const) {
    const bad = UNSAFE.exec(text);
    expect(
      bad,
      `${what} ${stream} has U+${bad?.[0].charCodeAt(0).toString(16).padStart(4, '0')}`,
    ).toBeNull();
  }
}

beforeAll(async () => {
  const started = await startServer(
    ['control-plane', '--port', '0'],
    { ANNEAL_KEY_PREFIX: prefix, ANNEAL_TOKEN: token, ANNEAL_LOG_LEVEL: 'warn', REDIS_URL },
    /listening on (http:\/\/\S+)/,
  );
  server = started.server;
  clientEnv = { ANNEAL_URL: started.match[1] ?? '', ANNEAL_TOKEN: token };
}, 60_000);

afterAll(async () => {
  const code = await server?.stop();
  expect(code).toBe(0);
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  rmSync(dir, { recursive: true, force: true });
});

describe('hostile server text', () => {
  it('reaches no terminal raw through submit, runs ls|get|pause|resume|cancel|watch and errors', async () => {
    // A label the schema refuses: its error names the hostile key and value.
    const refused = join(dir, 'refused.json');
    writeFileSync(
      refused,
      JSON.stringify({ kind: 'sft', steps: 2, labels: { [HOSTILE]: HOSTILE } }),
    );
    const rejected = await anneal(['submit', refused], clientEnv);
    expect(rejected.code).toBe(1);
    expectClean(rejected, 'submit (refused)');

    const file = join(dir, 'run.json');
    writeFileSync(file, JSON.stringify({ kind: 'sft', steps: 2, labels: { exp: 'hostile' } }));
    const submitted = await anneal(['submit', file], clientEnv);
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();

    // Queued (no worker): each takes effect at once, and each reason is stored as written.
    for (const action of ['pause', 'resume', 'cancel']) {
      const done = await anneal(['runs', action, id, '--reason', HOSTILE], clientEnv);
      expect(done.code, `${action}: ${done.stderr}`).toBe(0);
      expectClean(done, `runs ${action}`);
    }

    const got = await anneal(['runs', 'get', id], clientEnv);
    expect(got.code).toBe(0);
    expectClean(got, 'runs get');
    const run = JSON.parse(got.stdout) as { transitions: { to: string; reason: string }[] };
    // The same data: JSON escapes, not the sanitiser's text.
    expect(run.transitions.find((t) => t.to === 'cancelled')?.reason).toContain(HOSTILE);
    expect(got.stdout).toContain('\\u001b]0;pwned\\u0007');
    expect(got.stdout).toContain('\\u202e');

    const watched = await anneal(['runs', 'watch', id], clientEnv);
    expect(watched.code).toBe(1); // cancelled
    expectClean(watched, 'runs watch');
    // Shown, escaped: a reader sees what was written.
    expect(watched.stdout).toContain('\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\x07');
    expect(watched.stdout).toContain('\\u202egnp.exe\\x9b31m');
    expect(watched.stdout).toMatch(/state: paused -> queued \(.*\\x1b\]0;pwned/);
    // Who cancelled is the control plane's record, apart from the (impersonating) reason.
    const principal = (run.transitions.at(-1) as { principal?: string }).principal;
    expect(principal).toBeDefined();
    expect(watched.stdout).toContain(`state: queued -> cancelled by ${principal} (\\x1b]0;pwned`);

    const json = await anneal(['runs', 'watch', id, '--json'], clientEnv);
    expectClean(json, 'runs watch --json');
    const reasons = json.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { reason?: string }).reason ?? '');
    expect(reasons.some((r) => r.includes(HOSTILE))).toBe(true);

    const listed = await anneal(['runs', 'ls'], clientEnv);
    expectClean(listed, 'runs ls');
    expect(listed.stdout).toContain(id);

    // An error whose detail carries what the caller sent (an id the server echoes back).
    const missing = await anneal(['runs', 'get', `run_${HOSTILE}`], clientEnv);
    expect(missing.code).toBe(1);
    expectClean(missing, 'runs get (not found)');

    for (const args of [
      ['runs', 'checkpoints', id],
      ['runs', 'rollouts', id],
      ['runs', 'items', id],
      ['runs', 'results', id],
    ]) {
      expectClean(await anneal(args, clientEnv), args.join(' '));
    }
  }, 120_000);
});
