// The decision scripts/setup.mjs acts on (scripts/install-plan.mjs), driven by a fake package
// manager: for every combination of missing pieces, platform and rights, what it would run — or
// why it runs nothing and leaves today's one message.
import { describe, expect, it } from 'vitest';
import {
  describeMissing,
  describePlan,
  packageManagerFor,
  planInstall,
  shellLine,
  type System,
} from '../../scripts/install-plan.mjs';

/** A fake machine: which commands are on PATH, the platform, and the rights of this process. */
function fakeSystem(
  platform: string,
  commands: string[],
  rights: 'root' | 'sudo' | 'none',
): System {
  return {
    platform,
    manager: packageManagerFor(platform, (name) => commands.includes(name)),
    root: rights === 'root',
    sudo: rights === 'sudo',
  };
}

const TEST_PIECES = ['redis', 'prometheus', 'promtool', 'rsvg-convert', 'chromium'] as const;
const missing = (...ids: string[]) => ids.map((id) => ({ id }));
const go = { noInstall: false, interactive: false, env: {} };

/** What a fake apt-get would be asked to install, or null when it runs nothing. */
function aptPackages(plan: ReturnType<typeof planInstall>): string[] | null {
  if (plan.action !== 'install') return null;
  const install = plan.steps.find((step) => step.argv.includes('install'));
  const argv = install?.argv ?? [];
  return argv.slice(argv.indexOf('--no-install-recommends') + 1);
}

describe('install plan', () => {
  it('installs nothing when nothing is missing', () => {
    expect(planInstall([], fakeSystem('linux', ['apt-get'], 'root'), go)).toEqual({
      action: 'none',
    });
  });

  it('as root on Debian: apt-get update, then one non-interactive install of exactly the missing packages', () => {
    const plan = planInstall(
      missing('prometheus', 'promtool', 'chromium'),
      fakeSystem('linux', ['apt-get', 'sudo'], 'root'),
      go,
    );
    expect(plan).toEqual({
      action: 'install',
      manager: 'apt',
      as: 'root',
      ask: false,
      steps: [
        { argv: ['apt-get', 'update', '-qq'], why: expect.stringContaining('package lists') },
        {
          argv: [
            'env',
            'DEBIAN_FRONTEND=noninteractive',
            'apt-get',
            'install',
            '-y',
            '-qq',
            '--no-install-recommends',
            'prometheus',
            'chromium',
            'fonts-liberation',
          ],
          why: 'for prometheus, promtool, chromium',
        },
      ],
    });
  });

  it('with passwordless sudo: every command goes through sudo -n (which never prompts)', () => {
    const plan = planInstall(
      missing('redis'),
      fakeSystem('linux', ['apt-get', 'sudo'], 'sudo'),
      go,
    );
    expect(plan.action).toBe('install');
    if (plan.action !== 'install') return;
    expect(plan.as).toBe('passwordless sudo');
    expect(plan.steps.map((s) => s.argv.slice(0, 3))).toEqual([
      ['sudo', '-n', 'apt-get'],
      ['sudo', '-n', 'env'],
    ]);
    expect(aptPackages(plan)).toEqual(['redis-server']);
  });

  it('without root or passwordless sudo: reports, naming why', () => {
    const plan = planInstall(
      missing('chromium'),
      fakeSystem('linux', ['apt-get', 'sudo'], 'none'),
      go,
    );
    expect(plan).toEqual({
      action: 'report',
      reason: expect.stringMatching(/apt-get needs root or passwordless sudo/),
      cannot: [],
    });
  });

  it('on macOS with brew: formulae in one install, Chromium as a cask; never as root', () => {
    const plan = planInstall(
      missing('redis', 'prometheus', 'promtool', 'rsvg-convert', 'chromium'),
      fakeSystem('darwin', ['brew'], 'none'),
      go,
    );
    expect(plan).toMatchObject({
      action: 'install',
      manager: 'brew',
      as: 'your user',
      steps: [
        { argv: ['brew', 'install', 'redis', 'prometheus', 'librsvg'] },
        { argv: ['brew', 'install', '--cask', 'chromium'], why: 'for chromium' },
      ],
    });
    expect(planInstall(missing('redis'), fakeSystem('darwin', ['brew'], 'root'), go)).toMatchObject(
      { action: 'report', reason: expect.stringMatching(/Homebrew refuses to run as root/) },
    );
  });

  it('without a package manager it can use: reports, naming which it looked for', () => {
    for (const [platform, commands, reason] of [
      ['linux', ['dnf', 'sudo'], /no apt-get on PATH/],
      ['darwin', [], /no brew on PATH/],
      ['win32', ['apt-get', 'brew'], /not supported on win32/],
      ['linux', ['brew'], /no apt-get on PATH/],
    ] as const) {
      const plan = planInstall(missing('redis'), fakeSystem(platform, [...commands], 'root'), go);
      expect(plan).toMatchObject({ action: 'report', reason: expect.stringMatching(reason) });
    }
  });

  it('ANNEAL_NO_INSTALL=1 keeps the message and runs nothing, whatever the rights', () => {
    const plan = planInstall(missing('redis'), fakeSystem('linux', ['apt-get'], 'root'), {
      ...go,
      noInstall: true,
    });
    expect(plan).toMatchObject({
      action: 'report',
      reason: expect.stringMatching(/ANNEAL_NO_INSTALL=1/),
    });
  });

  it('asks once on a terminal, goes ahead without one', () => {
    const system = fakeSystem('linux', ['apt-get'], 'root');
    expect(planInstall(missing('redis'), system, { ...go, interactive: true })).toMatchObject({
      ask: true,
    });
    expect(planInstall(missing('redis'), system, go)).toMatchObject({ ask: false });
  });

  it('installs nothing when a missing piece no package provides (Node, an override that does not run)', () => {
    const system = fakeSystem('linux', ['apt-get'], 'root');
    expect(planInstall(missing('node', 'redis'), system, go)).toMatchObject({
      action: 'report',
      cannot: [{ id: 'node', why: 'no apt-get package provides it' }],
    });
    const plan = planInstall(missing('redis', 'chromium'), system, {
      ...go,
      env: { REDIS_URL: 'redis://10.0.0.9:6379' },
    });
    expect(plan).toMatchObject({
      action: 'report',
      cannot: [{ id: 'redis', why: expect.stringMatching(/^REDIS_URL is set/) }],
    });
  });

  it('for every combination of missing pieces, platform and rights: installs exactly what is missing, once', () => {
    const byPiece: Record<string, string[]> = {
      redis: ['redis-server'],
      prometheus: ['prometheus'],
      promtool: ['prometheus'],
      'rsvg-convert': ['librsvg2-bin'],
      chromium: ['chromium', 'fonts-liberation'],
    };
    const systems = [
      ['linux', ['apt-get', 'sudo'], 'root', true],
      ['linux', ['apt-get', 'sudo'], 'sudo', true],
      ['linux', ['apt-get', 'sudo'], 'none', false],
      ['linux', [], 'root', false],
    ] as const;
    let plans = 0;
    for (let mask = 1; mask < 1 << TEST_PIECES.length; mask++) {
      const ids = TEST_PIECES.filter((_, i) => mask & (1 << i));
      for (const [platform, commands, rights, installs] of systems) {
        const plan = planInstall(missing(...ids), fakeSystem(platform, [...commands], rights), go);
        expect(plan.action).toBe(installs ? 'install' : 'report');
        if (plan.action !== 'install') continue;
        plans++;
        const wanted = [...new Set(ids.flatMap((id) => byPiece[id] ?? []))];
        expect(aptPackages(plan)).toEqual(wanted);
        for (const step of plan.steps) expect(step.argv[0] === 'sudo').toBe(rights === 'sudo');
      }
    }
    expect(plans).toBe(2 * 31);
  });

  it('prints each command exactly as a shell would run it, with why, and the opt-out', () => {
    const found = [
      { id: 'rsvg-convert', what: 'rsvg-convert (rsvg-convert on PATH does not run)', how: 'x' },
    ];
    const plan = planInstall(found, fakeSystem('linux', ['apt-get'], 'root'), go);
    const text = describePlan('test', found, plan);
    expect(text).toContain('  $ apt-get update -qq\n');
    expect(text).toContain(
      '  $ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends librsvg2-bin\n      (for rsvg-convert)',
    );
    expect(text).toContain('ANNEAL_NO_INSTALL=1');
    expect(shellLine(['echo', "it's a b"])).toBe(`echo 'it'\\''s a b'`);
    expect(describeMissing('demo', found, 'no apt-get on PATH')).toMatch(
      /`npm run demo` needs 1 more thing[\s\S]*Nothing was installed, built or run: no apt-get on PATH\.$/,
    );
  });
});
