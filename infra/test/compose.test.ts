// docker-compose.yml: structure and cross-references (no Docker engine here).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseOperatorConfig } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { appEnvVars, durationSeconds, loadCompose, PLATFORM_ENV_VARS } from '../src/deploy.ts';
import { GRAFANA_DIR, PROMETHEUS_DIR, REPO_ROOT } from '../src/paths.ts';

const compose = loadCompose();
const service = (name: string) => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const promConfig = parse(readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8'));
const scrapeJob = (name: string) =>
  promConfig.scrape_configs.find((j: { job_name: string }) => j.job_name === name);
/** Host path of a bind mount into `target`. */
const mountSource = (svc: string, target: string) => {
  const volume = (service(svc).volumes ?? []).find((v) => v.split(':')[1] === target);
  return volume?.split(':')[0];
};

describe('docker-compose.yml', () => {
  it('has the services of the stack, vLLM only in the gpu profile', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      ['alertmanager', 'control-plane', 'grafana', 'prometheus', 'redis', 'vllm', 'worker'].sort(),
    );
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.profiles ?? [], name).toEqual(name === 'vllm' ? ['gpu'] : []);
    }
  });

  it('runs Redis with AOF fsynced every second and no eviction, on a volume', () => {
    const command = service('redis').command!.join(' ');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--appendfsync everysec');
    expect(command).toContain('--maxmemory-policy noeviction');
    const volume = mountSource('redis', '/data');
    expect(volume && compose.volumes && volume in compose.volumes).toBe(true);
  });

  it('keeps the worker scalable: no container_name, no host ports, time to checkpoint on stop', () => {
    const worker = service('worker');
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports ?? []).toEqual([]);
    const stopGrace = durationSeconds(worker.stop_grace_period ?? '10s');
    expect(stopGrace).toBeGreaterThanOrEqual(300);
    // the worker must give up on its own before compose kills it
    const ownGrace = Number(worker.environment!['ANNEAL_SHUTDOWN_GRACE_SECONDS']);
    expect(ownGrace).toBeGreaterThan(0);
    expect(ownGrace).toBeLessThan(stopGrace);
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.container_name, `${name} sets container_name`).toBeUndefined();
    }
  });

  it('publishes host ports on 127.0.0.1 only', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const port of s.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    }
  });

  it('builds the app images from Dockerfiles that exist', () => {
    for (const name of ['control-plane', 'worker']) {
      const build = service(name).build!;
      expect(build.context).toBe('.');
      expect(existsSync(path.join(REPO_ROOT, build.dockerfile)), build.dockerfile).toBe(true);
      expect(service(name).image).toMatch(new RegExp(`^anneal/${name}:`));
    }
  });

  it('scrapes what the services expose', () => {
    const cp = scrapeJob('anneal-control-plane').static_configs[0].targets[0];
    expect(cp).toBe(`control-plane:${service('control-plane').environment!['ANNEAL_PORT']}`);
    expect(service('control-plane').ports).toContain(`127.0.0.1:8080:${cp.split(':')[1]}`);

    const workerSd = scrapeJob('anneal-worker').dns_sd_configs[0];
    expect(workerSd.names).toEqual(['worker']);
    expect(service('worker').expose).toContain(String(workerSd.port));
    expect(service('worker').environment!['ANNEAL_METRICS_PORT']).toBe(String(workerSd.port));

    const vllmSd = scrapeJob('vllm').dns_sd_configs[0];
    expect(vllmSd.names).toEqual(['vllm']);
    expect(service('vllm').expose).toContain(String(vllmSd.port));
    expect(service('vllm').command!.join(' ')).toContain(`--port ${vllmSd.port}`);
  });

  it('mounts the Prometheus config and rules it points at', () => {
    expect(mountSource('prometheus', '/etc/prometheus')).toBe('./infra/prometheus');
    expect(service('prometheus').command).toContain('--config.file=/etc/prometheus/prometheus.yml');
  });

  it('provisions Grafana: datasource at the prometheus service, dashboards where the provider looks', () => {
    expect(mountSource('grafana', '/etc/grafana/provisioning')).toBe(
      './infra/grafana/provisioning',
    );
    const datasources = parse(
      readFileSync(path.join(GRAFANA_DIR, 'provisioning/datasources/anneal.yml'), 'utf8'),
    );
    const ds = datasources.datasources[0];
    expect(ds.uid).toBe('anneal-prometheus');
    expect(ds.url).toBe('http://prometheus:9090');
    expect(service('prometheus').ports).toContain('127.0.0.1:9090:9090');

    const providers = parse(
      readFileSync(path.join(GRAFANA_DIR, 'provisioning/dashboards/anneal.yml'), 'utf8'),
    );
    const dashboardsPath = providers.providers[0].options.path;
    expect(mountSource('grafana', dashboardsPath)).toBe('./infra/grafana/dashboards');

    const alerting = parse(
      readFileSync(path.join(GRAFANA_DIR, 'provisioning/alerting/anneal.yml'), 'utf8'),
    );
    const contactPoints = alerting.contactPoints.map((c: { name: string }) => c.name);
    expect(contactPoints).toContain(alerting.policies[0].receiver);
    expect(service('grafana').environment).toHaveProperty('ANNEAL_ALERT_WEBHOOK_URL');
  });

  it('runs vLLM with the flags docs/engines.md asks for, on a reserved GPU', () => {
    const vllm = service('vllm');
    const command = vllm.command!.join(' ');
    expect(command).toContain('--logprobs-mode processed_logprobs');
    expect(command).toContain('--enable-lora');
    expect(command).toContain('--max-loras 2'); // policy + reference
    expect(command).toContain('--max-cpu-loras 8'); // two runs' 3 + a scratch one, kept loaded
    expect(vllm.environment).toMatchObject({ VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' });
    // Dev mode exposes /collective_rpc and /sleep; weight sync no longer needs it.
    expect(vllm.environment).not.toHaveProperty('VLLM_SERVER_DEV_MODE');
    const devices = vllm.deploy?.resources?.reservations?.devices ?? [];
    expect(devices).toContainEqual(
      expect.objectContaining({ driver: 'nvidia', capabilities: ['gpu'] }),
    );
    // LoRA adapters written by workers are readable by vLLM at the same path
    const artifacts = service('worker').environment!['ANNEAL_ARTIFACT_DIR'];
    expect((vllm.volumes ?? []).some((v) => v.split(':')[1] === artifacts)).toBe(true);
    expect((service('worker').volumes ?? []).some((v) => v.split(':')[1] === artifacts)).toBe(true);
  });

  it("mounts the workers' artifact volume read only in the control plane, at its artifact root", () => {
    const workerDir = service('worker').environment!['ANNEAL_ARTIFACT_DIR'];
    const volumeAt = (svc: string, dir: string | undefined) =>
      (service(svc).volumes ?? []).find((v) => v.split(':')[1] === dir)?.split(':');
    const dir = service('control-plane').environment!['ANNEAL_ARTIFACT_DIR'];
    expect(dir).toBe(workerDir);
    const [volume, , mode] = volumeAt('control-plane', dir) ?? [];
    expect(volume).toBe(volumeAt('worker', workerDir)?.[0]);
    expect(mode).toBe('ro');
  });

  it('ships an operator config that the control plane accepts, naming the vLLM service', () => {
    const host = mountSource('control-plane', '/etc/anneal/operator-config.yaml')!;
    expect(service('control-plane').environment!['ANNEAL_CONFIG']).toBe(
      '/etc/anneal/operator-config.yaml',
    );
    const parsed = parseOperatorConfig(readFileSync(path.join(REPO_ROOT, host), 'utf8'));
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const vllm = parsed.value.inference['vllm'];
    expect(vllm).toMatchObject({ type: 'vllm', replicas: ['http://vllm:8000'] });
    expect(Object.keys(parsed.value.pools)).toContain(
      service('worker').environment!['ANNEAL_POOL']!.replace(/^\$\{ANNEAL_POOL:-(.*)\}$/, '$1'),
    );
  });

  it.each(['control-plane', 'worker'] as const)('sets only env vars that the %s reads', (app) => {
    const reads = appEnvVars(app);
    const set = Object.keys(service(app).environment ?? {});
    const unknown = set.filter((v) => !reads.has(v) && !PLATFORM_ENV_VARS.has(v));
    expect(unknown, `apps/${app}/src/env.ts reads: ${[...reads].join(', ')}`).toEqual([]);
  });
});
