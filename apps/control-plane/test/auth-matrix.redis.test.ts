// Role × tenant × route: every operation of the served OpenAPI document (/docs/json) is called by
// every kind of caller — no token, bad tokens, and viewer/submitter/operator tokens of the run's
// own tenant and of another — and each cell's status and code must be what docs/api.md
// "Authentication, roles, tenants" says. A route the table below does not classify fails the
// test, so a new route cannot ship without its row (a row may precede its route). All differing
// cells are listed at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '@anneal/protocol';
import { heartbeatWorker, startRun } from '@anneal/store';
import { sha256Hex } from '../src/plugins/auth.ts';
import { operationsOf } from './fuzz-arbitraries.ts';
import { type TestPlane, submit, testOperatorConfig, testPlane } from './helpers.ts';
import { commitStep } from './ledger-fixture.ts';

/** How a route is protected and scoped, from docs/api.md (sections "Authentication…", "Endpoints"). */
interface RouteRule {
  /** Minimum role; null: no token needed (health, readiness, metrics). */
  role: Role | null;
  /** `run`: `{id}` is a run, visible to its tenant only (`sweep`: a sweep); `cluster`:
   * pools/workers, visible to all. */
  scope: 'none' | 'run' | 'sweep' | 'cluster';
  /** A query string the call carries; `{id}` and `{id2}` are two runs of the target. */
  query?: string;
  /** Status of an allowed call on the fixtures (runs are cancelled, the worker is live). */
  ok: number;
  /** The problem code of an allowed call that is refused for what the fixture is (a 4xx). */
  okCode?: string;
  body?: { payload: string; contentType: string };
  /** The run kind `{id}` names: the eval fixture runs (default) or the GRPO ones, whose rollout
   * ledger has step 1 (`{rolloutId}` is its rollout 1-0-0). */
  fixture?: 'eval' | 'grpo';
}

const RULES: Record<string, RouteRule> = {
  'GET /healthz': { role: null, scope: 'none', ok: 200 },
  'GET /readyz': { role: null, scope: 'none', ok: 200 },
  'GET /metrics': { role: null, scope: 'none', ok: 200 },
  'POST /v1/runs': {
    role: 'submitter',
    scope: 'none',
    ok: 201,
    body: { payload: 'kind: sft\nsteps: 2\n', contentType: 'application/yaml' },
  },
  'GET /v1/runs': { role: 'viewer', scope: 'none', ok: 200 },
  'GET /v1/runs/{id}': { role: 'viewer', scope: 'run', ok: 200 },
  'GET /v1/runs/compare': { role: 'viewer', scope: 'run', ok: 200, query: 'run={id}&run={id2}' },
  'POST /v1/sweeps': {
    role: 'submitter',
    scope: 'none',
    ok: 201,
    body: {
      payload: 'kind: sweep\nbase: { kind: sft, steps: 2 }\ngrid: { seed: [1, 2] }\n',
      contentType: 'application/yaml',
    },
  },
  'GET /v1/sweeps': { role: 'viewer', scope: 'none', ok: 200 },
  'GET /v1/sweeps/{id}': { role: 'viewer', scope: 'sweep', ok: 200 },
  // The fixture sweeps' runs are cancelled: cancel, pause and resume have nothing to do.
  'POST /v1/sweeps/{id}/cancel': { role: 'submitter', scope: 'sweep', ok: 200 },
  'POST /v1/sweeps/{id}/pause': { role: 'submitter', scope: 'sweep', ok: 200 },
  'POST /v1/sweeps/{id}/resume': { role: 'submitter', scope: 'sweep', ok: 200 },
  // The fixture runs are cancelled already: "An already cancelled run answers 200".
  'POST /v1/runs/{id}/cancel': { role: 'submitter', scope: 'run', ok: 200 },
  // Pausing or resuming a finished (here: cancelled) run is refused: 409 ANNEAL_ERR_RUN_FINISHED.
  'POST /v1/runs/{id}/pause': {
    role: 'submitter',
    scope: 'run',
    ok: 409,
    okCode: 'ANNEAL_ERR_RUN_FINISHED',
  },
  'POST /v1/runs/{id}/resume': {
    role: 'submitter',
    scope: 'run',
    ok: 409,
    okCode: 'ANNEAL_ERR_RUN_FINISHED',
  },
  'GET /v1/runs/{id}/metrics': { role: 'viewer', scope: 'run', ok: 200 },
  // A finished run's stream replays its events and ends.
  'GET /v1/runs/{id}/events': { role: 'viewer', scope: 'run', ok: 200 },
  // The fixture runs are eval runs: their results exist (empty until a step is committed).
  'GET /v1/runs/{id}/results': { role: 'viewer', scope: 'run', ok: 200 },
  'GET /v1/runs/{id}/results/curve.svg': { role: 'viewer', scope: 'run', ok: 200 },
  // Eval runs: their answers (none until a cell is committed).
  'GET /v1/runs/{id}/items': { role: 'viewer', scope: 'run', ok: 200 },
  // An eval run records no checkpoints: an empty catalogue.
  'GET /v1/runs/{id}/checkpoints': { role: 'viewer', scope: 'run', ok: 200 },
  'GET /v1/runs/{id}/rollouts': { role: 'viewer', scope: 'run', ok: 200, fixture: 'grpo' },
  'GET /v1/runs/{id}/rollouts/{rolloutId}': {
    role: 'viewer',
    scope: 'run',
    ok: 200,
    fixture: 'grpo',
  },
  'POST /v1/runs/estimate': {
    role: 'submitter',
    scope: 'none',
    ok: 200,
    body: { payload: 'kind: sft\nsteps: 2\n', contentType: 'application/yaml' },
  },
  'GET /v1/runs/{id}/usage': { role: 'viewer', scope: 'run', ok: 200 },
  // Every tenant's usage: an operator view, cluster-wide like the workers.
  'GET /v1/usage': { role: 'operator', scope: 'cluster', ok: 200 },
  // …so its export finds no checkpoint (step 1 of an eval run): the caller reached the run.
  'GET /v1/runs/{id}/checkpoints/{step}/export': {
    role: 'viewer',
    scope: 'run',
    ok: 404,
    okCode: 'ANNEAL_ERR_CHECKPOINT_NOT_FOUND',
  },
  'GET /v1/pools': { role: 'viewer', scope: 'cluster', ok: 200 },
  'GET /v1/workers': { role: 'viewer', scope: 'cluster', ok: 200 },
  'POST /v1/workers/{id}/drain': { role: 'operator', scope: 'cluster', ok: 202 },
};

const RANK: Record<Role, number> = { viewer: 0, submitter: 1, operator: 2 };
const TENANTS = ['acme', 'beta'] as const;
const ROLES: Role[] = ['viewer', 'submitter', 'operator'];
const tokenOf = (tenant: string, role: Role) => `matrix-${tenant}-${role}-token-0123456789`;

interface Caller {
  label: string;
  authorization?: string;
  /** Absent: no valid token. */
  principal?: { role: Role; tenant: string };
}

const CALLERS: Caller[] = [
  { label: 'no token' },
  { label: 'unknown token', authorization: 'Bearer not-a-configured-token-0123456789' },
  {
    label: 'token hash as token',
    authorization: `Bearer ${sha256Hex(tokenOf('acme', 'operator'))}`,
  },
  { label: 'Basic scheme', authorization: `Basic ${tokenOf('acme', 'operator')}` },
  ...TENANTS.flatMap((tenant) =>
    ROLES.map((role) => ({
      label: `${tenant} ${role}`,
      authorization: `Bearer ${tokenOf(tenant, role)}`,
      principal: { role, tenant },
    })),
  ),
];

type Target = 'own' | 'other' | 'missing' | '-';
const MISSING_RUN = 'run_01J8Z3K4M5N6P7Q8R9S0T1V2W3';
const MISSING_RUN_2 = 'run_01J8Z3K4M5N6P7Q8R9S0T1V2W4';
const MISSING_SWEEP = 'sweep_01J8Z3K4M5N6P7Q8R9S0T1V2W3';
const WORKER_ID = 'matrix-worker-1';

let plane: TestPlane;
let operations: string[];
const runOf: Record<string, string> = {};
const grpoRunOf: Record<string, string> = {};
/** A second eval run of each tenant (the pair a comparison names), and a cancelled sweep. */
const secondRunOf: Record<string, string> = {};
const sweepOf: Record<string, string> = {};

beforeAll(async () => {
  plane = await testPlane({
    operator: testOperatorConfig({
      rateLimit: { max: 1_000_000, windowSeconds: 60 },
      tokens: TENANTS.flatMap((tenant) =>
        ROLES.map((role) => ({
          name: `${tenant}-${role}`,
          sha256: sha256Hex(tokenOf(tenant, role)),
          role,
          tenant,
        })),
      ),
    }),
  });
  operations = operationsOf((await plane.app.inject('/docs/json')).json()).map(
    (o) => `${o.method} ${o.path}`,
  );
  for (const tenant of TENANTS) {
    const created = await submit(plane.app, 'kind: eval\n', {
      token: tokenOf(tenant, 'submitter'),
    });
    expect(created.statusCode).toBe(201);
    const id = created.json<{ id: string }>().id;
    const cancelled = await plane.app.inject({
      method: 'POST',
      url: `/v1/runs/${id}/cancel`,
      headers: { authorization: `Bearer ${tokenOf(tenant, 'submitter')}` },
    });
    expect(cancelled.statusCode).toBe(200);
    runOf[tenant] = id;
    const second = await submit(plane.app, 'kind: eval\nseed: 1\n', {
      token: tokenOf(tenant, 'submitter'),
    });
    secondRunOf[tenant] = second.json<{ id: string }>().id;
    const sweep = await plane.app.inject({
      method: 'POST',
      url: '/v1/sweeps',
      headers: {
        authorization: `Bearer ${tokenOf(tenant, 'submitter')}`,
        'content-type': 'application/yaml',
      },
      payload: 'kind: sweep\nbase: { kind: sft }\ngrid: { seed: [1, 2] }\n',
    });
    expect(sweep.statusCode, sweep.body).toBe(201);
    sweepOf[tenant] = sweep.json<{ id: string }>().id;
    await plane.app.inject({
      method: 'POST',
      url: `/v1/sweeps/${sweepOf[tenant]}/cancel`,
      headers: { authorization: `Bearer ${tokenOf(tenant, 'submitter')}` },
    });
    const grpo = await submit(plane.app, 'kind: grpo\n', { token: tokenOf(tenant, 'submitter') });
    expect(grpo.statusCode).toBe(201);
    grpoRunOf[tenant] = grpo.json<{ id: string }>().id;
    await startRun(plane.store, grpoRunOf[tenant], `matrix-grpo-${tenant}`);
    await commitStep(plane.store, plane.artifactDir, grpoRunOf[tenant], 1);
  }
  // A worker holding one run of each tenant: callers must see only their own tenant's.
  await heartbeatWorker(
    plane.store,
    {
      id: WORKER_ID,
      pool: 'default',
      slots: 2,
      busy: 2,
      runs: [runOf['acme'] ?? '', runOf['beta'] ?? ''],
      startedAt: new Date().toISOString(),
    },
    3600,
  );
}, 60_000);

afterAll(() => plane.cleanup());

/** The expected [status, code] of a cell, from the rule alone. */
function expected(rule: RouteRule, caller: Caller, target: Target): [number, string | null] {
  if (rule.role === null) return [rule.ok, null];
  if (!caller.principal) return [401, 'ANNEAL_ERR_UNAUTHENTICATED'];
  if (RANK[caller.principal.role] < RANK[rule.role]) return [403, 'ANNEAL_ERR_FORBIDDEN'];
  if (target === 'other' || target === 'missing') {
    return [
      404,
      rule.scope === 'sweep' ? 'ANNEAL_ERR_SWEEP_NOT_FOUND' : 'ANNEAL_ERR_RUN_NOT_FOUND',
    ];
  }
  return [rule.ok, rule.okCode ?? null];
}

function targetsOf(rule: RouteRule): Target[] {
  return rule.scope === 'run' || rule.scope === 'sweep' ? ['own', 'other', 'missing'] : ['-'];
}

function urlOf(rule: RouteRule, path: string, caller: Caller, target: Target): string {
  const tenant = caller.principal?.tenant ?? 'acme';
  const other = tenant === 'acme' ? 'beta' : 'acme';
  const runs = rule.scope === 'sweep' ? sweepOf : rule.fixture === 'grpo' ? grpoRunOf : runOf;
  const missing = rule.scope === 'sweep' ? MISSING_SWEEP : MISSING_RUN;
  const id = path.startsWith('/v1/workers')
    ? WORKER_ID
    : target === 'own'
      ? runs[tenant]
      : target === 'other'
        ? runs[other]
        : missing;
  const id2 =
    target === 'own'
      ? secondRunOf[tenant]
      : target === 'other'
        ? secondRunOf[other]
        : MISSING_RUN_2;
  const url = rule.query === undefined ? path : `${path}?${rule.query}`;
  return url
    .replace('{id}', id ?? '')
    .replace('{id2}', id2 ?? '')
    .replace('{rolloutId}', '1-0-0')
    .replace('{step}', '1');
}

describe('role × tenant × route matrix (docs/api.md)', () => {
  it('has a rule for every documented operation', () => {
    expect(operations.filter((operation) => !(operation in RULES))).toEqual([]);
  });

  it('answers every cell as docs/api.md says', async () => {
    const differing: string[] = [];
    let cells = 0;
    for (const operation of operations) {
      const rule = RULES[operation];
      if (!rule) continue; // reported by the test above
      const [method = '', path = ''] = operation.split(' ');
      for (const caller of CALLERS) {
        for (const target of targetsOf(rule)) {
          cells++;
          const response = await plane.app.inject({
            method,
            url: urlOf(rule, path, caller, target),
            headers: {
              ...(caller.authorization !== undefined && { authorization: caller.authorization }),
              ...(rule.body && { 'content-type': rule.body.contentType }),
            },
            ...(rule.body && { payload: rule.body.payload }),
          });
          const [status, code] = expected(rule, caller, target);
          const isProblem = response.statusCode >= 400;
          const actualCode = isProblem ? response.json<{ code?: string }>().code : null;
          const where = `${operation} | ${caller.label} | target ${target}`;
          if (response.statusCode !== status || actualCode !== code) {
            differing.push(
              `${where}: expected ${status} ${code ?? ''}, got ${response.statusCode} ${actualCode ?? ''}`,
            );
            continue;
          }
          if (
            isProblem &&
            !String(response.headers['content-type']).startsWith('application/problem+json')
          )
            differing.push(`${where}: ${status} not as application/problem+json`);
          if (status === 401 && response.headers['www-authenticate'] !== 'Bearer realm="anneal"')
            differing.push(`${where}: 401 without www-authenticate: Bearer`);
          // Workers are cluster-wide; the runs on them are listed for the caller's tenant only.
          if (
            rule.scope === 'cluster' &&
            !isProblem &&
            caller.principal &&
            path.includes('workers')
          ) {
            const body = response.json<{ runs?: string[]; workers?: { runs: string[] }[] }>();
            const runs = body.workers ? body.workers.flatMap((w) => w.runs) : (body.runs ?? []);
            const own = runOf[caller.principal.tenant];
            if (JSON.stringify(runs) !== JSON.stringify([own]))
              differing.push(`${where}: worker runs ${JSON.stringify(runs)}, expected [${own}]`);
          }
        }
      }
    }
    console.info(`auth matrix: ${cells} cells, ${differing.length} differing`);
    expect(differing, `${differing.length} of ${cells} cells differ`).toEqual([]);
  }, 120_000);

  it("leaves another tenant's run untouched after its cancel and reads were refused", async () => {
    for (const tenant of TENANTS) {
      const run = await plane.app.inject({
        method: 'GET',
        url: `/v1/runs/${runOf[tenant]}`,
        headers: { authorization: `Bearer ${tokenOf(tenant, 'viewer')}` },
      });
      expect(run.json<{ tenant: string; state: string }>()).toMatchObject({
        tenant,
        state: 'cancelled',
      });
      const askedBy = run
        .json<{ transitions: { principal?: string }[] }>()
        .transitions.flatMap((t) => (t.principal === undefined ? [] : [t.principal]));
      // Only the owner's cancel from the setup appears, never another tenant's.
      expect(askedBy).toEqual([`${tenant}-submitter`]);
    }
  });
});
