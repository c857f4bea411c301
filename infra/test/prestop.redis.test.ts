// The Kubernetes preStop hook of every worker Deployment, run exactly as written (its exec
// command, from the repository root = the image's WORKDIR, with the container's env) against a
// real control plane: the worker it names (ANNEAL_WORKER_ID = the pod name) ends up draining.
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { createStoreContext, heartbeatWorker } from '@anneal/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type K8sObject, loadK8s } from '../src/deploy.ts';
import { REPO_ROOT } from '../src/paths.ts';
import { REDIS_URL, type LocalStack, startLocalStack } from './support/local-stack.ts';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}
interface WorkerDeployment extends K8sObject {
  spec: {
    template: {
      spec: {
        containers: {
          env?: EnvVar[];
          lifecycle?: { preStop?: { exec?: { command: string[] } } };
        }[];
      };
    };
  };
}

const objects = loadK8s();
const workers = objects.filter(
  (o): o is WorkerDeployment =>
    o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'worker',
);
const poolOf = (w: K8sObject) => w.metadata.labels?.['anneal.dev/pool'] ?? '';

let stack: LocalStack;
let redis: Redis;

beforeAll(async () => {
  stack = await startLocalStack({ pools: Object.fromEntries(workers.map((w) => [poolOf(w), 1])) });
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
}, 60_000);

afterAll(async () => {
  await redis?.quit();
  await stack?.close();
});

function run(command: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
    const [file, ...args] = command;
    const child = spawn(file!, args, { cwd: REPO_ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('worker preStop hook', () => {
  it('finds the worker Deployments', () => {
    expect(workers.map(poolOf).sort()).toEqual(['cpu', 'gpu']);
  });

  it.each(workers.map((w) => [w.metadata.name, w] as const))(
    '%s: the hook drains the pod’s worker through the control plane',
    async (name, deployment) => {
      const container = deployment.spec.template.spec.containers[0]!;
      const command = container.lifecycle?.preStop?.exec?.command;
      expect(command, `${name} has no preStop exec`).toBeDefined();
      const env = new Map((container.env ?? []).map((e) => [e.name, e]));
      // The hook's inputs come from the pod: its name, the Service URL and the operator token.
      expect(env.get('ANNEAL_WORKER_ID')?.valueFrom).toEqual({
        fieldRef: { fieldPath: 'metadata.name' },
      });
      expect(env.get('ANNEAL_TOKEN')?.valueFrom).toBeDefined();
      const url = new URL(env.get('ANNEAL_URL')?.value ?? 'missing:');
      const service = objects.find(
        (o) => o.kind === 'Service' && o.metadata.name === 'anneal-control-plane',
      );
      expect(url.hostname).toBe(
        `${service?.metadata.name}.${service?.metadata.namespace}.svc.cluster.local`,
      );
      const ports = (service?.spec as { ports: { port: number }[] }).ports.map((p) => p.port);
      expect(ports).toContain(Number(url.port || 80));

      // A live worker registered under a pod name, as the worker process does.
      const podName = `${name}-7d4b9c6f5-x2x9z`;
      const pool = poolOf(deployment);
      await heartbeatWorker(
        createStoreContext(redis, stack.prefix),
        {
          id: podName,
          pool,
          slots: 1,
          busy: 1,
          runs: ['run_01J0000000000000000000PSTP'],
          startedAt: new Date().toISOString(),
        },
        600, // outlives a slow CLI start on a loaded machine
      );

      // The container's literal env, with the cluster-only values pointed at this stack.
      const literal = Object.fromEntries(
        [...env.values()].filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]),
      );
      const result = await run(command!, {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        ...literal,
        ANNEAL_URL: stack.url,
        ANNEAL_TOKEN: stack.token,
        ANNEAL_WORKER_ID: podName,
      });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^draining ${podName} `));

      const { workers: live } = await stack.api<{ workers: { id: string; draining: boolean }[] }>(
        'GET',
        '/v1/workers',
      );
      expect(live.find((w) => w.id === podName)).toMatchObject({
        draining: true,
        checkpointAndRelease: false,
      });
    },
    60_000,
  );
});
