// Readers for the deployment files, for structural and cross-reference tests (no Docker engine
// or cluster needed): docker-compose.yml, Kubernetes manifests, Dockerfiles, app env modules.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { COMPOSE_FILE, K8S_DIR, REPO_ROOT } from './paths.ts';

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  profiles?: string[];
  container_name?: string;
  stop_grace_period?: string;
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] };
  deploy?: {
    resources?: {
      reservations?: { devices?: { driver?: string; count?: number; capabilities?: string[] }[] };
    };
  };
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

export function loadCompose(file = COMPOSE_FILE): ComposeFile {
  return parse(readFileSync(file, 'utf8'), { merge: true }) as ComposeFile;
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  /** Which file it came from. */
  file: string;
}

/** Every object of the manifests in `dir` (kustomization.yaml is configuration, not an object). */
export function loadK8s(dir = K8S_DIR): K8sObject[] {
  const out: K8sObject[] = [];
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
  for (const file of files.sort()) {
    for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const value = doc.toJS() as Omit<K8sObject, 'file'> | null;
      if (value) out.push({ ...value, file });
    }
  }
  return out;
}

/** Compose/Go durations such as 10m, 90s, 1h30m → seconds. */
export function durationSeconds(text: string): number {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new Error(`not a duration: ${text}`);
  }
  const unit: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6 };
  return parts.reduce((sum, [, n, u]) => sum + Number(n) * (unit[u!] ?? 0), 0);
}

export interface Dockerfile {
  stages: string[];
  /** Instructions of the last stage, in order (keyword upper-cased, then the rest). */
  final: { keyword: string; args: string }[];
  all: { keyword: string; args: string }[];
}

export function readDockerfile(file: string): Dockerfile {
  const text = readFileSync(file, 'utf8').replace(/\\\n/g, ' ');
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const all = lines.map((l) => {
    const [keyword = '', ...rest] = l.split(/\s+/);
    return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
  });
  const fromIndexes = all.flatMap((i, n) => (i.keyword === 'FROM' ? [n] : []));
  const stages = fromIndexes.map((n) => all[n]!.args);
  return { stages, final: all.slice(fromIndexes.at(-1) ?? 0), all };
}

const ENV_NAME = /\b(?:ANNEAL_[A-Z0-9_]+|REDIS_URL)\b/g;

function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return tsFiles(full);
    return entry.endsWith('.ts') && !entry.endsWith('.test.ts') ? [full] : [];
  });
}

/** Environment variables an app's env module reads (apps/<app>/src/env.ts). */
export function appEnvVars(app: 'control-plane' | 'worker'): Set<string> {
  const file = path.join(REPO_ROOT, 'apps', app, 'src', 'env.ts');
  if (!existsSync(file)) {
    throw new Error(`apps/${app}/src/env.ts is missing: the app's env vars are parsed there`);
  }
  return new Set(readFileSync(file, 'utf8').match(ENV_NAME) ?? []);
}

/** Environment variables the CLI reads anywhere in its sources (used by the preStop drain). */
export function cliEnvVars(): Set<string> {
  const names = tsFiles(path.join(REPO_ROOT, 'apps', 'cli', 'src')).flatMap(
    (f) => readFileSync(f, 'utf8').match(ENV_NAME) ?? [],
  );
  return new Set(names);
}

/** Variables outside Anneal's own namespace that images and runtimes read themselves. */
export const PLATFORM_ENV_VARS = new Set(['NODE_ENV', 'NODE_OPTIONS', 'TZ']);
