// What to do about missing prerequisites, decided without touching the machine: given what is
// missing, the platform, its package manager and the rights this process has, either install
// (the exact commands, each with why) or report (today's one message, with the reason nothing was
// installed). scripts/setup.mjs gathers the facts, prints, asks and runs; this module only
// decides, so infra/test/install-plan.test.ts drives it with a fake package manager. Node
// built-ins only: this runs before dependencies are installed.
import { PREREQUISITES } from './prerequisites-table.mjs';

/** The package manager automatic installs use on this platform, or null. */
export function packageManagerFor(platform, hasCommand) {
  if (platform === 'linux' && hasCommand('apt-get')) return 'apt';
  if (platform === 'darwin' && hasCommand('brew')) return 'brew';
  return null;
}

function noManagerReason(platform) {
  if (platform === 'linux') {
    return 'no apt-get on PATH (automatic installs use apt-get on Debian/Ubuntu, brew on macOS)';
  }
  if (platform === 'darwin') return 'no brew on PATH (automatic installs on macOS use Homebrew)';
  return `automatic installs are not supported on ${platform} (apt-get on Debian/Ubuntu, brew on macOS)`;
}

/** Who runs the manager: null (with why) when this process may not. */
function runner(system) {
  if (system.manager === 'apt') {
    if (system.root) return { as: 'root', prefix: [] };
    if (system.sudo) return { as: 'passwordless sudo', prefix: ['sudo', '-n'] };
    return { why: 'apt-get needs root or passwordless sudo, and `sudo -n true` failed' };
  }
  if (system.root) return { why: 'Homebrew refuses to run as root' };
  return { as: 'your user', prefix: [] };
}

const unique = (items) => [...new Set(items)];

/** Why a missing piece cannot be installed by any manager here, or null. */
function notInstallable(item, manager, env) {
  const entry = PREREQUISITES[item.id];
  if (!entry) return `unknown prerequisite ${item.id}`;
  if (entry.override && env[entry.override]) {
    return `${entry.override} is set, so the copy it names is the one to fix`;
  }
  const packages = [
    ...(entry[manager] ?? []),
    ...(manager === 'brew' ? (entry.brewCask ?? []) : []),
  ];
  if (packages.length === 0)
    return `no ${manager === 'apt' ? 'apt-get' : 'brew'} package provides it`;
  return null;
}

/**
 * @param {{id: string}[]} missing what the checks found missing (ids of PREREQUISITES)
 * @param {{platform: string, manager: 'apt'|'brew'|null, root: boolean, sudo: boolean}} system
 * @param {{noInstall: boolean, interactive: boolean, env: Record<string, string|undefined>}} options
 * @returns the decision: {action: 'none'} | {action: 'report', reason, cannot} |
 *   {action: 'install', manager, as, ask, steps: {argv, why}[]}
 */
export function planInstall(missing, system, options) {
  if (missing.length === 0) return { action: 'none' };
  if (options.noInstall) {
    return {
      action: 'report',
      reason: 'ANNEAL_NO_INSTALL=1 is set, so nothing is installed',
      cannot: [],
    };
  }
  if (!system.manager)
    return { action: 'report', reason: noManagerReason(system.platform), cannot: [] };
  const who = runner(system);
  if (who.why) return { action: 'report', reason: who.why, cannot: [] };
  // One piece no manager can provide (Node itself, a REDIS_URL that does not answer) stops the
  // task anyway: install nothing rather than leave the machine changed and the task not run.
  const cannot = missing
    .map((item) => ({ id: item.id, why: notInstallable(item, system.manager, options.env) }))
    .filter((item) => item.why !== null);
  if (cannot.length > 0) {
    return {
      action: 'report',
      reason: cannot.map((c) => `${c.id}: ${c.why}`).join('; '),
      cannot,
    };
  }
  const ids = missing.map((item) => item.id);
  const forIds = (key) => (id) => PREREQUISITES[id][key] ?? [];
  const steps = [];
  if (system.manager === 'apt') {
    const packages = unique(ids.flatMap(forIds('apt')));
    steps.push({
      argv: [...who.prefix, 'apt-get', 'update', '-qq'],
      why: 'refresh the package lists: a fresh machine has none',
    });
    steps.push({
      argv: [
        ...who.prefix,
        'env',
        'DEBIAN_FRONTEND=noninteractive',
        'apt-get',
        'install',
        '-y',
        '-qq',
        '--no-install-recommends',
        ...packages,
      ],
      why: `for ${ids.join(', ')}`,
    });
  } else {
    const formulae = unique(ids.flatMap(forIds('brew')));
    const casks = unique(ids.flatMap(forIds('brewCask')));
    const provides = (key) => ids.filter((id) => (PREREQUISITES[id][key] ?? []).length > 0);
    if (formulae.length > 0) {
      steps.push({
        argv: ['brew', 'install', ...formulae],
        why: `for ${provides('brew').join(', ')}`,
      });
    }
    if (casks.length > 0) {
      steps.push({
        argv: ['brew', 'install', '--cask', ...casks],
        why: `for ${provides('brewCask').join(', ')}`,
      });
    }
  }
  return {
    action: 'install',
    manager: system.manager,
    as: who.as,
    ask: options.interactive,
    steps,
  };
}

/** An argv as a shell would need it typed. */
export function shellLine(argv) {
  return argv
    .map((arg) => (/^[\w./=@:+-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`))
    .join(' ');
}

const taskCommand = (task) => `npm ${task === 'test' ? 'test' : `run ${task}`}`;

/** The one message listing everything missing, and why nothing was installed. */
export function describeMissing(task, missing, reason) {
  const lines = missing.map((m) => `  - ${m.what}\n      get it: ${m.how}`);
  return (
    `anneal: \`${taskCommand(task)}\` needs ${missing.length} more ` +
    `thing${missing.length === 1 ? '' : 's'} on this machine:\n${lines.join('\n')}\n` +
    `Nothing was installed, built or run${reason ? `: ${reason}` : ''}.`
  );
}

/** What an install plan will run, printed before it runs (and before the question). */
export function describePlan(task, missing, plan) {
  const lines = missing.map((m) => `  - ${m.what}`);
  const steps = plan.steps.map((step) => `  $ ${shellLine(step.argv)}\n      (${step.why})`);
  return (
    `anneal: \`${taskCommand(task)}\` needs ${missing.length} more ` +
    `thing${missing.length === 1 ? '' : 's'} on this machine:\n${lines.join('\n')}\n` +
    `anneal: installing ${missing.length === 1 ? 'it' : 'them'} with ` +
    `${plan.manager === 'apt' ? 'apt-get' : 'brew'} as ${plan.as} ` +
    `(ANNEAL_NO_INSTALL=1 only lists them):\n${steps.join('\n')}`
  );
}
