// Control-plane events → anneal_http_*, anneal_queue_*, anneal_pool_* and anneal_runs* metrics.
import type { TelemetryEvents } from './events.ts';
import { RUN_KINDS, RUN_STATES } from '@anneal/protocol';
import { QUEUE_STATES, WORKER_STATES } from './labels.ts';
import type { MetricWriter } from './writer.ts';

type Handlers = { [K in keyof TelemetryEvents]?: (payload: TelemetryEvents[K]) => void };

export function controlPlaneHandlers(w: MetricWriter): Handlers {
  return {
    'http:responded': (e) => {
      const status_code = String(e.statusCode);
      w.inc('anneal_http_requests_total', { route: e.route, method: e.method, status_code });
      const labels = { route: e.route, method: e.method };
      w.observe('anneal_http_request_duration_seconds', labels, e.durationSeconds);
    },
    'pool:observed': (e) => {
      for (const state of QUEUE_STATES) {
        w.set('anneal_queue_depth', { pool: e.pool, state }, e.queue[state]);
      }
      const oldest = e.oldestWaitingAgeSeconds ?? 0;
      w.set('anneal_queue_oldest_waiting_age_seconds', { pool: e.pool }, oldest);
      for (const state of WORKER_STATES) {
        w.set('anneal_pool_workers', { pool: e.pool, state }, e.workers[state]);
      }
    },
    'workers:observed': (e) => {
      // a snapshot: drop workers that left the registry since the last one
      w.reset('anneal_pool_worker_heartbeat_age_seconds');
      for (const x of e.workers) {
        const labels = { pool: x.pool, worker: x.worker };
        w.set(
          'anneal_pool_worker_heartbeat_age_seconds',
          labels,
          Math.max(0, x.heartbeatAgeSeconds),
        );
      }
    },
    'runs:observed': (e) => {
      const counts = new Map<string, number>();
      for (const c of e.counts) {
        const key = `${c.state}/${c.kind}`;
        counts.set(key, (counts.get(key) ?? 0) + c.count);
      }
      for (const state of RUN_STATES) {
        for (const kind of RUN_KINDS) {
          w.set('anneal_runs', { state, kind }, counts.get(`${state}/${kind}`) ?? 0);
        }
      }
    },
    'run:transitioned': (e) => {
      w.inc('anneal_runs_transitions_total', { state: e.state, kind: e.kind });
      if (e.state === 'running' && e.queuedSeconds !== undefined) {
        w.observe('anneal_queue_wait_duration_seconds', { pool: e.pool }, e.queuedSeconds);
      }
    },
  };
}
