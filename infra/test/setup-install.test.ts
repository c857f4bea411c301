// `npm test` installs what it is missing itself (scripts/setup.mjs): with a fake apt-get (or, on
// macOS, brew) first on a PATH that has nothing else, the real script prints what it runs, runs
// it without a terminal (as CI does), installs only what is missing, checks again and goes on.
// The fake records its argv and, like the real manager, puts the packages' programs on PATH
// (Debian's prometheus ships prometheus and promtool; librsvg2-bin ships rsvg-convert) or, for a
// package the archive lacks, fails the whole install as apt-get does ("Unable to locate package",
// exit 100, nothing installed). Nothing on the machine itself is installed or removed.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/paths.ts';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const manager = process.platform === 'darwin' ? 'brew' : 'apt-get';

const PROGRAMS: Record<string, string[]> = {
  prometheus: ['prometheus', 'promtool'],
  'librsvg2-bin': ['rsvg-convert'],
  librsvg: ['rsvg-convert'],
  chromium: ['chromium'],
  'redis-server': ['redis-server'],
  redis: ['redis-server'],
  'fonts-liberation': [],
};

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A PATH with node, env, a fake package manager and a fake sudo, plus `present` programs. */
function fakeMachine(present: string[], unknownPackages: string[] = []) {
  const bin = mkdtempSync(path.join(tmpdir(), 'anneal-setup-'));
  dirs.push(bin);
  symlinkSync(process.execPath, path.join(bin, 'node'));
  symlinkSync('/usr/bin/env', path.join(bin, 'env'));
  const log = path.join(bin, 'manager.log');
  const stub = (name: string) => {
    writeFileSync(path.join(bin, name), '#!/bin/sh\nexit 0\n');
    chmodSync(path.join(bin, name), 0o755);
  };
  for (const name of present) stub(name);
  const fake = `#!${process.execPath}
const fs = require('node:fs'), path = require('node:path');
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(args) + '\\n');
if (!args.includes('install')) process.exit(0);
const programs = ${JSON.stringify(PROGRAMS)};
const unknown = ${JSON.stringify(unknownPackages)};
const packages = args.filter((a) => !a.startsWith('-') && a !== 'install');
for (const p of packages) {
  if (unknown.includes(p) || !(p in programs)) { console.error('E: Unable to locate package ' + p); process.exit(100); }
}
for (const p of packages) for (const name of programs[p]) {
  fs.writeFileSync(path.join(${JSON.stringify(bin)}, name), '#!/bin/sh\\nexit 0\\n', { mode: 0o755 });
}
`;
  writeFileSync(path.join(bin, manager), fake);
  chmodSync(path.join(bin, manager), 0o755);
  // sudo -n: runs the command (passwordless), as on a developer's machine that is not root.
  const sudo = `#!${process.execPath}
const args = process.argv.slice(2);
if (args[0] !== '-n') process.exit(1);
const r = require('node:child_process').spawnSync(args[1], args.slice(2), { stdio: 'inherit' });
process.exit(r.status ?? 1);
`;
  writeFileSync(path.join(bin, 'sudo'), sudo);
  chmodSync(path.join(bin, 'sudo'), 0o755);
  const calls = () =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as string[])
      : [];
  return { bin, calls };
}

function setup(task: string, bin: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
    // stdin, stdout and stderr are pipes: no terminal, so it goes ahead without asking.
    const child = spawn(process.execPath, ['scripts/setup.mjs', task], {
      cwd: REPO_ROOT,
      env: { HOME: process.env['HOME'] ?? bin, PATH: bin, REDIS_URL, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

const installs = (calls: string[][]) => calls.filter((argv) => argv.includes('install'));

describe('npm test installs what is missing', () => {
  it('Prometheus and Chromium missing: prints and runs exactly their install, then finds them and goes on', async () => {
    const machine = fakeMachine(['rsvg-convert']);
    const run = await setup('test', machine.bin);
    expect(run.stderr).toContain('needs 3 more things');
    expect(run.code).toBe(0);
    if (manager === 'apt-get') {
      expect(machine.calls()).toEqual([
        ['update', '-qq'],
        [
          'install',
          '-y',
          '-qq',
          '--no-install-recommends',
          'prometheus',
          'chromium',
          'fonts-liberation',
        ],
      ]);
      expect(run.stderr).toContain(
        '$ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus chromium fonts-liberation\n      (for prometheus, promtool, chromium)',
      );
    } else {
      expect(machine.calls()).toEqual([
        ['install', 'prometheus'],
        ['install', '--cask', 'chromium'],
      ]);
    }
    expect(run.stderr).toContain('installed prometheus, promtool, chromium; continuing.');
    expect(run.stdout).toBe('');
    // Now present: a second run installs nothing and says nothing.
    const again = await setup('test', machine.bin);
    expect(again).toMatchObject({ code: 0, stderr: '' });
    expect(installs(machine.calls())).toHaveLength(manager === 'apt-get' ? 1 : 2);
  });

  it('a package the archive lacks: the install fails, and the message names the failed command and what is still missing', async () => {
    const machine = fakeMachine(['rsvg-convert', 'prometheus', 'promtool'], ['chromium']);
    const run = await setup('test', machine.bin);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Unable to locate package chromium');
    expect(run.stderr).toMatch(
      /needs 1 more thing on this machine:\n\s+- chromium \(chromium on PATH does not run\)/,
    );
    expect(run.stderr).toMatch(
      /Nothing more was installed, built or run: installing failed: `.*install.*chromium.*` exited 100\./,
    );
  });

  it("ANNEAL_NO_INSTALL=1: today's one message, the package manager never runs", async () => {
    const machine = fakeMachine([]);
    const run = await setup('test', machine.bin, { ANNEAL_NO_INSTALL: '1' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Nothing was installed, built or run: ANNEAL_NO_INSTALL=1 is set');
    expect(machine.calls()).toEqual([]);
  });
});
