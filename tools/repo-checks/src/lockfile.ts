// Supply-chain check of package-lock.json that needs no network (the registry's audit endpoints
// are not reachable from every machine; docs/security.md): every installed package is a
// registry package at an exact version pinned by a sha512 integrity hash, never a git, tarball-URL
// or file source (which `npm ci` would fetch without the registry's checks), and every link
// points at a workspace of this repository.

export interface LockProblem {
  /** The entry's key in `packages` (e.g. `node_modules/fastify`), or `` for the file. */
  path: string;
  problem: string;
}

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
}

export const NPM_REGISTRY = 'https://registry.npmjs.org/';

const EXACT_VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const SHA512 = /^sha512-[A-Za-z0-9+/]{86}==$/;

/** Problems of a parsed lockfile (lockfileVersion 3, as npm 9+ writes it). */
export function lockfileProblems(lock: unknown, registry: string = NPM_REGISTRY): LockProblem[] {
  const file = lock as { lockfileVersion?: unknown; packages?: Record<string, LockEntry> };
  if (file?.lockfileVersion !== 3 || typeof file.packages !== 'object' || !file.packages)
    return [{ path: '', problem: 'expected lockfileVersion 3 with a "packages" map' }];
  const packages = file.packages;
  const problems: LockProblem[] = [];
  const report = (path: string, problem: string) => problems.push({ path, problem });
  for (const [path, entry] of Object.entries(packages)) {
    if (!path.includes('node_modules/')) continue; // the root and the workspaces themselves
    if (entry.link) {
      const target = entry.resolved ?? '';
      if (target === '' || target.startsWith('/') || target.split('/').includes('..'))
        report(path, `links outside the repository ('${target}')`);
      else if (!(target in packages)) report(path, `links to '${target}', not a workspace`);
      continue;
    }
    if (!EXACT_VERSION.test(entry.version ?? ''))
      report(path, `version '${String(entry.version)}' is not an exact registry version`);
    if (entry.resolved !== undefined && !entry.resolved.startsWith(registry))
      report(path, `resolved from '${entry.resolved}', not ${registry}`);
    if (!SHA512.test(entry.integrity ?? ''))
      report(path, `integrity '${String(entry.integrity)}' is not a sha512 hash`);
  }
  return problems;
}

export const formatLockProblem = (p: LockProblem): string => `${p.path}: ${p.problem}`;
