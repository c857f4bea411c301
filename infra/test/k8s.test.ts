// infra/k8s: manifest structure and cross-references (no cluster needed).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseOperatorConfig } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  appEnvVars,
  cliEnvVars,
  loadK8s,
  PLATFORM_ENV_VARS,
  type K8sObject,
} from '../src/deploy.ts';
import { kedaExpressions } from '../src/expressions.ts';
import { DOCKER_DIR, K8S_DIR, PROMETHEUS_DIR } from '../src/paths.ts';
import { seriesNamesIn } from '../src/promql.ts';

interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    containers: Container[];
    terminationGracePeriodSeconds?: number;
    tolerations?: { key: string }[];
    volumes?: {
      name: string;
      configMap?: { name: string };
      persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
    }[];
  };
}
interface DeploymentSpec {
  selector: { matchLabels: Record<string, string> };
  template: PodTemplate;
}

const objects = loadK8s();
const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
const deployment = (name: string) => {
  const d = ofKind('Deployment').find((o) => o.metadata.name === name);
  if (!d) throw new Error(`no Deployment ${name} in infra/k8s`);
  return d as K8sObject & { spec: DeploymentSpec };
};
/** Pod-owning workloads: Deployments and StatefulSets (vLLM). */
const workloads = () =>
  [...ofKind('Deployment'), ...ofKind('StatefulSet')] as (K8sObject & { spec: DeploymentSpec })[];
const workload = (name: string) => {
  const w = workloads().find((o) => o.metadata.name === name);
  if (!w) throw new Error(`no Deployment or StatefulSet ${name} in infra/k8s`);
  return w;
};
const workers = ofKind('Deployment').filter(
  (d) => d.metadata.labels?.['app.kubernetes.io/component'] === 'worker',
) as (K8sObject & {
  spec: DeploymentSpec;
})[];
const envOf = (c: Container) => new Map((c.env ?? []).map((e) => [e.name, e.value]));
const operatorConfig = (() => {
  const cm = ofKind('ConfigMap').find((o) => o.metadata.name === 'anneal-operator-config')!;
  const parsed = parseOperatorConfig(cm.data!['operator-config.yaml']!);
  if (!parsed.ok) throw new Error(`operator config: ${JSON.stringify(parsed.errors)}`);
  return parsed.value;
})();

describe('infra/k8s manifests', () => {
  it('are complete objects in the anneal namespace, listed in the kustomization', () => {
    const kustomization = parse(readFileSync(path.join(K8S_DIR, 'kustomization.yaml'), 'utf8'));
    const files = new Set(objects.map((o) => o.file));
    expect([...files].sort()).toEqual([...kustomization.resources].sort());
    for (const o of objects) {
      expect(o.apiVersion, o.file).toBeTruthy();
      expect(o.metadata.name, o.file).toBeTruthy();
      if (o.kind !== 'Namespace')
        expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe('anneal');
    }
  });

  it('ship an operator config the control plane accepts', () => {
    expect(Object.keys(operatorConfig.pools).length).toBeGreaterThan(0);
  });

  it('expose the control plane through a Service that selects its pods and port', () => {
    const cp = deployment('anneal-control-plane');
    const service = ofKind('Service').find((s) => s.metadata.name === 'anneal-control-plane')!;
    const spec = service.spec as {
      selector: Record<string, string>;
      ports: { targetPort: string | number }[];
    };
    expect(cp.spec.template.metadata.labels).toMatchObject(spec.selector);
    expect(cp.spec.template.metadata.labels).toMatchObject(cp.spec.selector.matchLabels);
    const container = cp.spec.template.spec.containers[0]!;
    const port = container.ports![0]!;
    expect([port.name, port.containerPort]).toContain(spec.ports[0]!.targetPort);
    expect(envOf(container).get('ANNEAL_PORT')).toBe(String(port.containerPort));
  });

  it("mount the workers' artifacts claim read only in the control plane, at its artifact root", () => {
    const claimAt = (name: string) => {
      const pod = deployment(name).spec.template.spec;
      const container = pod.containers[0]!;
      const dir = envOf(container).get('ANNEAL_ARTIFACT_DIR');
      const mount = container.volumeMounts?.find((m) => m.mountPath === dir);
      const volume = pod.volumes?.find((v) => v.name === mount?.name);
      return { dir, mount, claim: volume?.persistentVolumeClaim };
    };
    const plane = claimAt('anneal-control-plane');
    for (const w of workers) {
      const worker = claimAt(w.metadata.name);
      expect(plane.dir).toBe(worker.dir);
      expect(plane.claim?.claimName).toBe(worker.claim?.claimName);
    }
    expect(plane.mount?.readOnly).toBe(true);
    expect(plane.claim?.readOnly).toBe(true);
  });

  it('run one worker Deployment per pool of the operator config', () => {
    const pools = workers.map((w) => w.metadata.labels?.['anneal.dev/pool']).sort();
    expect(pools).toEqual(Object.keys(operatorConfig.pools).sort());
    for (const w of workers) {
      const pool = w.metadata.labels!['anneal.dev/pool'];
      expect(w.spec.selector.matchLabels['anneal.dev/pool']).toBe(pool);
      expect(w.spec.template.metadata.labels['anneal.dev/pool']).toBe(pool);
      expect(envOf(w.spec.template.spec.containers[0]!).get('ANNEAL_POOL')).toBe(pool);
    }
  });

  it.each(workers.map((w) => [w.metadata.name, w] as const))(
    '%s drains before stopping and has time to checkpoint',
    (_name, w) => {
      const pod = w.spec.template.spec;
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(300);
      const container = pod.containers[0]!;
      const preStop = container.lifecycle?.preStop?.exec?.command.join(' ') ?? '';
      expect(preStop).toMatch(/anneal\.js workers drain "\$ANNEAL_WORKER_ID"/);
      const workerId = container.env?.find((e) => e.name === 'ANNEAL_WORKER_ID');
      expect(workerId?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    },
  );

  it('give GPU workers a GPU and the taint toleration', () => {
    const gpu = workers.find((w) => w.metadata.labels!['anneal.dev/pool'] === 'gpu')!;
    const container = gpu.spec.template.spec.containers[0]!;
    expect(container.resources?.limits?.['nvidia.com/gpu']).toBe(1);
    expect(container.resources?.requests?.['nvidia.com/gpu']).toBe(1);
    expect(gpu.spec.template.spec.tolerations?.map((t) => t.key)).toContain('nvidia.com/gpu');
  });

  it('annotate pods the way prometheus.k8s.yml relabels them, on the ports they listen on', () => {
    const config = readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.k8s.yml'), 'utf8');
    for (const d of workloads()) {
      const annotations = d.spec.template.metadata.annotations ?? {};
      expect(annotations['prometheus.io/scrape'], d.metadata.name).toBe('true');
      for (const key of Object.keys(annotations)) {
        const meta = `__meta_kubernetes_pod_annotation_${key.replace(/[^A-Za-z0-9]/g, '_')}`;
        expect(config, `${d.metadata.name}: ${key} is not relabelled`).toContain(meta);
      }
      const ports = d.spec.template.spec.containers.flatMap((c) =>
        (c.ports ?? []).map((p) => String(p.containerPort)),
      );
      expect(ports, d.metadata.name).toContain(annotations['prometheus.io/port']);
    }
    const jobs = Object.fromEntries(
      workloads().map((d) => [
        d.metadata.name,
        d.spec.template.metadata.annotations?.['anneal.dev/job'],
      ]),
    );
    expect(jobs).toMatchObject({
      'anneal-control-plane': 'anneal-control-plane',
      'anneal-worker-gpu': 'anneal-worker',
      vllm: 'vllm',
    });
  });

  it('use Anneal images that have a Dockerfile', () => {
    for (const d of workloads()) {
      for (const c of d.spec.template.spec.containers) {
        const match = /^anneal\/([a-z-]+):/.exec(c.image);
        if (!match) continue;
        expect(existsSync(path.join(DOCKER_DIR, `${match[1]}.Dockerfile`)), c.image).toBe(true);
      }
    }
  });

  it('mount only ConfigMaps and claims that exist', () => {
    const names = new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`));
    for (const d of workloads()) {
      for (const v of d.spec.template.spec.volumes ?? []) {
        if (v.configMap) expect(names, d.metadata.name).toContain(`ConfigMap/${v.configMap.name}`);
        if (v.persistentVolumeClaim) {
          expect(names, d.metadata.name).toContain(
            `PersistentVolumeClaim/${v.persistentVolumeClaim.claimName}`,
          );
        }
      }
    }
  });

  it('run vLLM with the flags docs/engines.md asks for', () => {
    const container = workload('vllm').spec.template.spec.containers[0]!;
    expect(container.args!.join(' ')).toContain('--logprobs-mode processed_logprobs');
    expect(container.args).toContain('--enable-lora');
    expect(container.args!.join(' ')).toContain('--max-loras 2'); // policy + reference
    expect(container.args!.join(' ')).toContain('--max-cpu-loras 8'); // two runs' 3 + a scratch one, kept loaded
    expect(envOf(container).get('VLLM_ALLOW_RUNTIME_LORA_UPDATING')).toBe('True');
    // Dev mode exposes /collective_rpc and /sleep; weight sync no longer needs it.
    expect(envOf(container).has('VLLM_SERVER_DEV_MODE')).toBe(false);
  });

  it('run vLLM as a StatefulSet behind a headless Service, one operator-config URL per pod', () => {
    // Weight sync must reach every replica and routing picks the least-busy one: the worker
    // needs each pod's own address, which a load-balanced ClusterIP Service would hide.
    expect(ofKind('Deployment').map((d) => d.metadata.name)).not.toContain('vllm');
    const sts = ofKind('StatefulSet').find((o) => o.metadata.name === 'vllm')!;
    const spec = sts.spec as unknown as DeploymentSpec & { serviceName: string; replicas: number };
    const service = ofKind('Service').find((s) => s.metadata.name === spec.serviceName)!;
    const svc = service.spec as {
      clusterIP?: string;
      selector: Record<string, string>;
      ports: { port: number; targetPort: string | number }[];
    };
    expect(svc.clusterIP).toBe('None');
    expect(spec.template.metadata.labels).toMatchObject(svc.selector);
    expect(spec.template.metadata.labels).toMatchObject(spec.selector.matchLabels);
    const container = spec.template.spec.containers[0]!;
    const port = container.ports!.find((p) =>
      [p.name, p.containerPort].includes(svc.ports[0]!.targetPort),
    )!;
    expect(container.args!.join(' ')).toContain(`--port ${port.containerPort}`);
    const namespace = sts.metadata.namespace;
    const expected = Array.from(
      { length: spec.replicas },
      (_, i) =>
        `http://${sts.metadata.name}-${i}.${spec.serviceName}.${namespace}.svc.cluster.local:${svc.ports[0]!.port}`,
    );
    const endpoint = operatorConfig.inference['vllm'];
    expect(endpoint?.type).toBe('vllm');
    expect(endpoint?.type === 'vllm' && endpoint.replicas).toEqual(expected);
    expect(spec.replicas).toBeGreaterThan(1);
  });

  it('set only env vars the apps read (the worker also runs the CLI in preStop)', () => {
    const cli = cliEnvVars();
    const checked: [string, 'control-plane' | 'worker'][] = [
      ['anneal-control-plane', 'control-plane'],
      ...workers.map((w): [string, 'worker'] => [w.metadata.name, 'worker']),
    ];
    for (const [name, app] of checked) {
      const reads = appEnvVars(app);
      const container = deployment(name).spec.template.spec.containers[0]!;
      const unknown = (container.env ?? [])
        .map((e) => e.name)
        .filter(
          (v) => !reads.has(v) && !PLATFORM_ENV_VARS.has(v) && !(app === 'worker' && cli.has(v)),
        );
      expect(unknown, `${name}: apps/${app}/src/env.ts reads ${[...reads].join(', ')}`).toEqual([]);
    }
  });
});

describe('KEDA', () => {
  const scaled = ofKind('ScaledObject');

  it('scales every GPU worker Deployment', () => {
    const targets = scaled.map(
      (s) => (s.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name,
    );
    for (const w of workers) expect(targets).toContain(w.metadata.name);
  });

  it.each(scaled.map((s) => [s.metadata.name, s] as const))(
    '%s: prometheus trigger on its own pool’s queue depth, threshold = slots, sane cooldown',
    (_name, s) => {
      const spec = s.spec as {
        scaleTargetRef: { name: string };
        cooldownPeriod: number;
        pollingInterval: number;
        minReplicaCount: number;
        maxReplicaCount: number;
        triggers: {
          type: string;
          metadata: { query: string; threshold: string; serverAddress: string };
        }[];
      };
      const target = deployment(spec.scaleTargetRef.name);
      const pool = target.metadata.labels!['anneal.dev/pool']!;
      expect(spec.triggers).toHaveLength(1);
      const trigger = spec.triggers[0]!;
      expect(trigger.type).toBe('prometheus');
      expect(trigger.metadata.serverAddress).toMatch(/^https?:\/\//);
      expect(seriesNamesIn(trigger.metadata.query)).toEqual(['anneal_queue_depth']);
      expect(trigger.metadata.query).toContain(`pool="${pool}"`);
      expect(Number(trigger.metadata.threshold)).toBe(operatorConfig.pools[pool]!.slots);
      expect(spec.cooldownPeriod).toBeGreaterThanOrEqual(300);
      expect(spec.pollingInterval).toBeGreaterThanOrEqual(15);
      expect(spec.maxReplicaCount).toBeGreaterThan(spec.minReplicaCount);
    },
  );

  it('triggers are part of the expression list for live evaluation', () => {
    expect(
      kedaExpressions()
        .map((e) => e.origin)
        .sort(),
    ).toEqual(scaled.map((s) => `${s.file} ScaledObject ${s.metadata.name}`).sort());
  });
});
