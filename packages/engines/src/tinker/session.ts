// A session on a Tinker-compatible server: `create_session`, then `session_heartbeat` every
// `heartbeatIntervalMs` until closed (servers unload a session's models after ~300 s without
// one). The trainer engine and the hosted sampler each hold one.
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import { realScheduler, realTimers, seededRng } from '../http/timing.ts';
import type { Rng, Scheduler, Timers } from '../http/timing.ts';
import type { ResolvedTinkerConnection } from './config.ts';
import { TinkerTransport } from './transport.ts';
import type { TinkerEvent } from './transport.ts';
import { TINKER_ROUTES } from './wire.ts';
import type * as Wire from './wire.ts';

export interface TinkerDeps {
  timers?: Timers;
  scheduler?: Scheduler;
  rng?: Rng;
  onEvent?: (event: TinkerEvent) => void;
}

export class TinkerSession {
  private heartbeatTimer: { cancel(): void } | undefined;
  private closedFlag = false;

  private constructor(
    readonly transport: TinkerTransport,
    readonly id: string,
    scheduler: Scheduler,
  ) {
    const interval = transport.config.heartbeatIntervalMs;
    if (interval > 0) {
      let beating = false; // a slow (retrying) heartbeat is not overlapped by the next tick
      this.heartbeatTimer = scheduler.every(interval, () => {
        if (beating) return;
        beating = true;
        void this.heartbeat()
          .catch(() => undefined) // reported through onEvent
          .finally(() => (beating = false));
      });
    }
  }

  /** Creates a session on the server and starts its heartbeat. */
  static async open(
    config: ResolvedTinkerConnection,
    deps: TinkerDeps = {},
  ): Promise<TinkerSession> {
    const transport = new TinkerTransport(
      config,
      deps.timers ?? realTimers,
      deps.rng ?? seededRng(config.jitterSeed),
      deps.onEvent ?? (() => {}),
    );
    const body: Wire.CreateSessionRequest = { tags: config.tags, sdk_version: config.sdkVersion };
    if (config.userMetadata) body.user_metadata = config.userMetadata;
    const reply = await transport.post(TINKER_ROUTES.createSession, body);
    const session = reply.json;
    if (!isObject(session) || typeof session['session_id'] !== 'string') {
      throw new EngineError(
        ENGINE_ERROR_CODES.response,
        transport.context(TINKER_ROUTES.createSession),
        `create_session reply has no session_id: ${reply.text.slice(0, 200)}`,
      );
    }
    return new TinkerSession(transport, session['session_id'], deps.scheduler ?? realScheduler);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** One `session_heartbeat` (also sent every `heartbeatIntervalMs`). Failures are reported
   * as `session:heartbeat_failed` events and rethrown; a 404 means the session is gone. */
  async heartbeat(): Promise<void> {
    if (this.closedFlag) return;
    const body: Wire.SessionHeartbeatRequest = { session_id: this.id };
    try {
      await this.transport.post(TINKER_ROUTES.sessionHeartbeat, body);
    } catch (error) {
      this.transport.emit({
        type: 'session:heartbeat_failed',
        endpoint: this.transport.config.name,
        sessionId: this.id,
        error: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
  }

  /** Stops the heartbeat (the server unloads the session's models after its timeout) and ends
   * whatever the endpoint still has in flight — a heartbeat's retries, an operation's future
   * polls: they reject as closed rather than retry against a server that may be gone (their
   * backoff timers would otherwise keep a process that is shutting down alive). */
  close(): void {
    this.closedFlag = true;
    this.heartbeatTimer?.cancel();
    this.heartbeatTimer = undefined;
    this.transport.close();
  }
}
