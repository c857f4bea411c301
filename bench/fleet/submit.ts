// Submitting runs the honest way: POST /v1/runs over real HTTP (node:http, keep-alive
// connections, lighter on the shared CPU than fetch), a fixed number of requests in flight,
// each with its tenant's token.
import { Agent, request as httpRequest } from 'node:http';
import type { RunResource } from '@anneal/protocol';
import { HOLD_LABEL, type UNTIL_RELEASED } from './instant-executor.ts';

export interface RunRequest {
  tenant: string;
  pool: string;
  priority: number;
  /** Executor hold: milliseconds (0 = instant) or until the bench releases it. */
  hold: number | typeof UNTIL_RELEASED;
}

export interface Submitted extends RunRequest {
  id: string;
  /** When the response arrived (bench clock, ms). */
  answeredMs: number;
}

export async function submitRuns(
  url: string,
  tokens: Record<string, string>,
  requests: readonly RunRequest[],
  inFlight: number,
): Promise<Submitted[]> {
  const out: Submitted[] = new Array(requests.length);
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  let next = 0;
  const one = async (request: RunRequest): Promise<Submitted> => {
    const body = JSON.stringify({
      kind: 'sft',
      steps: 1,
      pool: request.pool,
      priority: request.priority,
      labels: { bench: 'fleet', [HOLD_LABEL]: String(request.hold) },
    });
    const { status, text } = await post(
      agent,
      `${url}/v1/runs`,
      tokens[request.tenant] ?? '',
      body,
    );
    if (status !== 201) throw new Error(`POST /v1/runs answered ${status}: ${text}`);
    const run = JSON.parse(text) as RunResource;
    if (run.tenant !== request.tenant || run.pool !== request.pool) {
      throw new Error(
        `run ${run.id}: tenant/pool ${run.tenant}/${run.pool}, expected ${request.tenant}/${request.pool}`,
      );
    }
    return { ...request, id: run.id, answeredMs: Date.now() };
  };
  const lane = async () => {
    while (next < requests.length) {
      const i = next++;
      out[i] = await one(requests[i] as RunRequest);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(inFlight, requests.length) }, lane));
  } finally {
    agent.destroy();
  }
  return out;
}

function post(
  agent: Agent,
  url: string,
  token: string,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
