// Makes the machine ready for a task before anything is built or run: checks the prerequisites
// (scripts/prerequisites.mjs), and when some are missing and the platform's package manager may
// install them without a password (apt-get as root or with passwordless sudo, brew on macOS),
// prints exactly what it will run and why, asks once on a terminal (default yes; without one it
// goes ahead), installs only what is missing and checks again. Otherwise — or with
// ANNEAL_NO_INSTALL=1 — one message lists everything missing, how to get it and why nothing was
// installed. The decision is scripts/install-plan.mjs. Node built-ins only (runs before `npm ci`).
//
// `node scripts/setup.mjs <task>` does only this (exit 0 when the machine is ready).
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import {
  describeMissing,
  describePlan,
  packageManagerFor,
  planInstall,
  shellLine,
} from './install-plan.mjs';
import { missingPrerequisites } from './prerequisites.mjs';

/** Whether name is an executable file in one of env.PATH's folders. */
function hasCommand(env, name) {
  return (env.PATH ?? '').split(path.delimiter).some((dir) => {
    if (!dir) return false;
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The facts planInstall decides on, read from this machine. */
function readSystem(env) {
  const platform = process.platform;
  const manager = packageManagerFor(platform, (name) => hasCommand(env, name));
  const root = process.getuid?.() === 0;
  const sudo =
    manager === 'apt' &&
    !root &&
    hasCommand(env, 'sudo') &&
    spawnSync('sudo', ['-n', 'true'], { env, stdio: 'ignore', timeout: 10_000 }).status === 0;
  return { platform, manager, root, sudo };
}

async function confirm(question) {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await rl.question(question)).trim().toLowerCase();
    return answer === '' || answer === 'y' || answer === 'yes';
  } finally {
    rl.close();
  }
}

/**
 * @returns {Promise<boolean>} whether everything task needs is present (after installing what
 *   could be); when not, the message naming what is missing and why has been printed.
 */
export async function ensurePrerequisites(task, env = process.env) {
  const missing = await missingPrerequisites(task, env);
  if (missing.length === 0) return true;
  const plan = planInstall(missing, readSystem(env), {
    noInstall: env.ANNEAL_NO_INSTALL === '1',
    interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
    env,
  });
  if (plan.action === 'report') {
    console.error(describeMissing(task, missing, plan.reason));
    return false;
  }
  console.error(describePlan(task, missing, plan));
  if (plan.ask && !(await confirm('Install now? [Y/n] '))) {
    console.error(describeMissing(task, missing, 'you answered no'));
    return false;
  }
  let failure = null;
  for (const step of plan.steps) {
    console.error(`anneal: $ ${shellLine(step.argv)}`);
    // The manager's own output goes to stderr: a task's stdout stays the task's.
    const result = spawnSync(step.argv[0], step.argv.slice(1), {
      env,
      stdio: ['inherit', process.stderr, process.stderr],
    });
    if (result.error || result.status !== 0) {
      const how = result.error ? result.error.message : `exited ${result.status ?? result.signal}`;
      failure = `\`${shellLine(step.argv)}\` ${how}`;
      break;
    }
  }
  const still = await missingPrerequisites(task, env);
  if (still.length === 0) {
    console.error(`anneal: installed ${missing.map((m) => m.id).join(', ')}; continuing.`);
    return true;
  }
  const reason = failure
    ? `installing failed: ${failure}`
    : `${shellLine(plan.steps.at(-1).argv)} finished, but these still do not run`;
  console.error(
    describeMissing(task, still, reason).replace(
      'Nothing was installed',
      'Nothing more was installed',
    ),
  );
  return false;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const task = process.argv[2];
  process.exit((await ensurePrerequisites(task)) ? 0 : 1);
}
