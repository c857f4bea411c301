// infra/docker: multi-stage, non-root images that run the compiled JavaScript (dist/) on Node 24.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCompose, readDockerfile } from '../src/deploy.ts';
import { DOCKER_DIR, REPO_ROOT } from '../src/paths.ts';

const apps = [
  ['control-plane', 8080],
  ['worker', 9464],
] as const;

describe.each(apps)('infra/docker/%s.Dockerfile', (app, port) => {
  const file = path.join(DOCKER_DIR, `${app}.Dockerfile`);
  const docker = readDockerfile(file);
  const cmd = JSON.parse(docker.final.find((i) => i.keyword === 'CMD')!.args) as string[];

  it('is multi-stage', () => {
    expect(docker.stages.length).toBeGreaterThanOrEqual(2);
  });

  it('runs as a non-root user in the final stage', () => {
    const users = docker.final.filter((i) => i.keyword === 'USER').map((i) => i.args);
    expect(users.at(-1)).toBeDefined();
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
  });

  it('installs with npm ci and never lets onnxruntime download anything', () => {
    const installs = docker.all.filter(
      (i) => i.keyword === 'RUN' && /npm (ci|install)/.test(i.args),
    );
    expect(installs.length).toBeGreaterThan(0);
    expect(installs.every((i) => /npm ci/.test(i.args))).toBe(true);
    const skip = docker.all.findIndex(
      (i) => i.keyword === 'ENV' && i.args === 'ONNXRUNTIME_NODE_INSTALL=skip',
    );
    expect(skip).toBeGreaterThanOrEqual(0);
    expect(skip).toBeLessThan(
      docker.all.findIndex((i) => i.keyword === 'RUN' && /npm ci/.test(i.args)),
    );
  });

  it('runs compiled JavaScript with plain node: an app entry, or a CLI command that exists', () => {
    expect(cmd[0]).toBe('node');
    const entry = cmd[1]!;
    // dist/ is built inside the image (npm run build); its source is what must exist here.
    const compiled = /^apps\/([a-z-]+)\/dist\/main\.js$/.exec(entry);
    expect(compiled, `${entry} is not apps/<app>/dist/main.js`).not.toBeNull();
    expect(existsSync(path.join(REPO_ROOT, `apps/${compiled![1]}/src/main.ts`)), entry).toBe(true);
    if (compiled![1] !== 'cli') {
      expect(compiled![1]).toBe(app);
      return;
    }
    const command = cmd[2]!;
    const commandsDir = path.join(REPO_ROOT, 'apps/cli/src/commands');
    const sources = readdirSync(commandsDir)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => readFileSync(path.join(commandsDir, f), 'utf8'))
      .join('\n');
    const registers = new RegExp(`\\.command\\(\\s*['"\`]${command}(['"\`\\s])`);
    expect(registers.test(sources), `no CLI command "${command}" in apps/cli/src/commands`).toBe(
      true,
    );
  });

  it('builds dist/ in a build stage and ships no TypeScript tooling', () => {
    expect(docker.all.some((i) => i.keyword === 'RUN' && /scripts\/build\.mjs/.test(i.args))).toBe(
      true,
    );
    const final = docker.final.map((i) => `${i.keyword} ${i.args}`).join('\n');
    expect(final).not.toMatch(/\btsx\b|--omit=dev/);
    expect(final).toMatch(/COPY --from=deps /);
  });

  it('runs on the current Node LTS (24)', () => {
    const arg = docker.all.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE='));
    expect(arg?.args).toMatch(/^NODE_IMAGE=node:24[.-]/);
  });

  it(`exposes ${port}, the port compose and Kubernetes use`, () => {
    expect(docker.final.filter((i) => i.keyword === 'EXPOSE').map((i) => i.args)).toContain(
      String(port),
    );
  });

  it('has a .dockerignore that keeps node_modules and .git out of the context', () => {
    const ignore = readFileSync(`${file}.dockerignore`, 'utf8');
    expect(ignore).toMatch(/^\*\*\/node_modules$/m);
    expect(ignore).toMatch(/^\.git$/m);
  });

  it('is the Dockerfile compose builds', () => {
    expect(loadCompose().services[app]?.build?.dockerfile).toBe(`infra/docker/${app}.Dockerfile`);
  });
});
