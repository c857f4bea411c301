// The engines' JSON exchanges over plain HTTP/1.1 (`http:` origins: vLLM, the trainer, the
// embedded servers), read from the socket straight into the buffer the reply ends up in.
//
// A reply of announced length (vLLM and SkyRL always announce it: FastAPI's JSONResponse sets
// `content-length`) is read by the kernel directly into a buffer of the process's pool: the
// socket is opened with Node's `onread` option, and once a reply's head is parsed every read of
// its body lands where the previous one ended. Through undici each read instead arrived in a new
// 64 KiB buffer that V8 counted towards its full collections, was copied into llhttp's memory to be
// parsed and then once more into the reply's buffer: receiving 600 MB that way cost this machine
// ~0.57 s of CPU against ~0.10 s read in place (docs/performance.md "Orchestrator overhead:
// replies read in place"). Chunked and close-delimited replies are read too (gathered, then
// joined), as are 1xx interim replies (skipped). One request at a time per connection (no
// pipelining); idle connections are kept per origin for reuse, unreferenced so they never hold a
// process open, and closed after `idleMs` or sooner when the server's `keep-alive: timeout=N`
// says so. The caller's signal is the only deadline: it carries the request's timeout.
import { Buffer } from 'node:buffer';
import net from 'node:net';
import type { BytePool } from './byte-pool.ts';

export interface Http1Request {
  /** An `http:` URL. */
  url: URL;
  method: string;
  /** Lower-case names; `host` and `content-length` are the client's. */
  headers: Readonly<Record<string, string>>;
  body: string | Uint8Array | null;
  signal: AbortSignal;
}

export interface Http1Reply {
  status: number;
  bytes: Uint8Array;
  /** The pool's buffer `bytes` is a view of, when the body was read into one. */
  pooled: Buffer | undefined;
}

/** A transport failure: the connection refused, reset or closed before the reply ended, or a
 * reply that is not HTTP/1.1 as the client reads it. `code` is the socket's (ECONNREFUSED, ...)
 * or one of the client's own (HTTP_PREMATURE_CLOSE, HTTP_PROTOCOL). */
export class Http1Error extends Error {
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'Http1Error';
  }
}

/** undici's default keep-alive (lib/dispatcher/client.js `keepAliveTimeout`), under uvicorn's
 * 5 s `timeout_keep_alive` and Node's 5 s `keepAliveTimeout`. */
const DEFAULT_IDLE_MS = 4_000;
/** A server's keep-alive timeout is cut by this much, so the client stops reusing a connection
 * before the server may close it (undici's `keepAliveTimeoutThreshold`). */
const IDLE_MARGIN_MS = 1_000;
const HEAD_BYTES_START = 16 * 1024;
/** A reply head (status line and headers) longer than this is refused. */
export const MAX_HEAD_BYTES = 64 * 1024;
const MAX_CHUNK_LINE_BYTES = 4 * 1024;

const CR = 0x0d;
const LF = 0x0a;

export class Http1Agent {
  private readonly idle = new Map<string, Connection[]>();

  constructor(
    private readonly pool: BytePool,
    private readonly idleMs = DEFAULT_IDLE_MS,
  ) {}

  /** One request and its whole reply. Rejects with the signal's reason when it aborts, with an
   * Http1Error (or the socket's own error) when the exchange fails. */
  exchange(request: Http1Request): Promise<Http1Reply> {
    const { url, signal } = request;
    if (url.protocol !== 'http:') throw new TypeError(`Http1Agent: not an http: URL (${url.href})`);
    signal.throwIfAborted();
    const head = requestHead(request);
    const key = url.host;
    const connection =
      this.takeIdle(key) ??
      new Connection(url.hostname, Number(url.port || 80), this.pool, (reused) =>
        this.keep(key, reused),
      );
    return connection.send(head, request.body, signal);
  }

  /** Closes every idle connection (connections in use close when their exchange ends). */
  close(): void {
    for (const connections of this.idle.values()) {
      for (const connection of connections) connection.destroy();
    }
    this.idle.clear();
  }

  private takeIdle(key: string): Connection | undefined {
    const connections = this.idle.get(key);
    while (connections !== undefined && connections.length > 0) {
      const connection = connections.pop() as Connection;
      if (connection.usable()) return connection;
    }
    return undefined;
  }

  /** A connection whose reply ended and that may carry another request. */
  private keep(key: string, connection: Connection): void {
    const idleMs = Math.min(this.idleMs, connection.serverIdleMs - IDLE_MARGIN_MS);
    if (idleMs <= 0) {
      connection.destroy();
      return;
    }
    let connections = this.idle.get(key);
    if (connections === undefined) {
      connections = [];
      this.idle.set(key, connections);
    }
    const list = connections;
    list.push(connection);
    connection.rest(idleMs, () => {
      const at = list.indexOf(connection);
      if (at >= 0) list.splice(at, 1);
    });
  }
}

type BodyMode = 'none' | 'length' | 'chunked' | 'close';

interface Pending {
  resolve(reply: Http1Reply): void;
  reject(error: unknown): void;
  signal: AbortSignal;
  onAbort: () => void;
  method: string;
  /** Until the head is parsed, -1. */
  status: number;
  mode: BodyMode;
  keepAlive: boolean;
  /** `length`: the body's buffer and how much of it is filled. */
  body: Buffer | undefined;
  pooled: Buffer | undefined;
  length: number;
  filled: number;
  /** `chunked` and `close`: the decoded body's pieces. */
  pieces: Buffer[];
  chunk: ChunkState;
}

interface ChunkState {
  /** 'size': a chunk-size line is next; 'data': `remaining` bytes of data; 'crlf': the line
   * end after a chunk's data; 'trailer': trailer lines until an empty one. */
  phase: 'size' | 'data' | 'crlf' | 'trailer';
  remaining: number;
}

/** One socket: one exchange at a time; reads land in `target`. */
class Connection {
  private readonly socket: net.Socket;
  /** Where a reply's head (and, in chunked and close modes, its raw body) is read. */
  private scratch = Buffer.allocUnsafe(HEAD_BYTES_START);
  /** Bytes of `scratch` holding data not yet consumed. */
  private held = 0;
  /** Where the next read lands (`onread`'s buffer). */
  private target: Uint8Array;
  private pending: Pending | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private onIdleClose: (() => void) | undefined;
  private broken = false;
  /** From the last reply's `keep-alive: timeout=N`; Infinity when it named none. */
  serverIdleMs = Number.POSITIVE_INFINITY;

  constructor(
    host: string,
    port: number,
    private readonly pool: BytePool,
    private readonly reusable: (connection: Connection) => void,
  ) {
    this.target = this.scratch;
    this.socket = net.connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: () => this.target,
        callback: (bytes: number) => {
          this.onRead(bytes);
          return true;
        },
      },
    });
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('end', () => this.onEnd());
    this.socket.on('close', () =>
      this.fail(new Http1Error('connection closed before the reply ended', 'HTTP_PREMATURE_CLOSE')),
    );
  }

  usable(): boolean {
    return !this.broken && !this.socket.destroyed && this.pending === undefined;
  }

  destroy(): void {
    this.broken = true;
    this.clearIdle();
    this.socket.destroy();
  }

  /** Idle: unreferenced, closed after `idleMs` (then `onClose`, as when the server closes it). */
  rest(idleMs: number, onClose: () => void): void {
    this.onIdleClose = onClose;
    this.socket.unref();
    this.idleTimer = setTimeout(() => this.destroy(), idleMs);
    this.idleTimer.unref();
  }

  send(head: string, body: string | Uint8Array | null, signal: AbortSignal): Promise<Http1Reply> {
    this.clearIdle();
    this.socket.ref();
    return new Promise<Http1Reply>((resolve, reject) => {
      const onAbort = (): void => {
        const pending = this.pending;
        this.pending = undefined;
        if (pending) this.settleFailed(pending, signal.reason);
        this.destroy();
      };
      this.pending = {
        resolve,
        reject,
        signal,
        onAbort,
        method: head.slice(0, head.indexOf(' ')),
        status: -1,
        mode: 'none',
        keepAlive: true,
        body: undefined,
        pooled: undefined,
        length: 0,
        filled: 0,
        pieces: [],
        chunk: { phase: 'size', remaining: 0 },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.socket.cork();
      this.socket.write(head, 'latin1');
      if (body !== null && body.length > 0) this.socket.write(body);
      this.socket.uncork();
    });
  }

  private clearIdle(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const onClose = this.onIdleClose;
    this.onIdleClose = undefined;
    if (onClose !== undefined && (this.broken || this.socket.destroyed)) onClose();
  }

  private onRead(bytes: number): void {
    const pending = this.pending;
    if (pending === undefined) {
      // nothing was asked: a server that talks out of turn is not reused
      this.destroy();
      return;
    }
    try {
      if (pending.mode === 'length' && pending.status >= 0) {
        pending.filled += bytes;
        this.target = (pending.body as Buffer).subarray(pending.filled, pending.length);
        if (pending.filled === pending.length) this.complete(pending);
        return;
      }
      this.held += bytes;
      this.consume(pending);
    } catch (error) {
      this.pending = undefined;
      this.settleFailed(pending, error);
      this.destroy();
    }
  }

  /** Parses what `scratch` holds: the head, then (chunked, close) the body's bytes. */
  private consume(pending: Pending): void {
    while (pending.status < 0) {
      const end = headEnd(this.scratch, this.held);
      if (end < 0) {
        if (this.held === this.scratch.length) this.growScratch();
        this.target = this.scratch.subarray(this.held);
        return;
      }
      const interim = this.readHead(pending, end);
      this.shift(end);
      if (interim) continue;
      if (pending.mode === 'length') {
        this.startLengthBody(pending);
        return;
      }
    }
    if (pending.mode === 'none') {
      if (this.held > 0)
        throw new Http1Error('bytes after a reply without a body', 'HTTP_PROTOCOL');
      this.complete(pending);
      return;
    }
    if (pending.mode === 'close') {
      if (this.held > 0) pending.pieces.push(Buffer.from(this.scratch.subarray(0, this.held)));
      this.held = 0;
      this.target = this.scratch;
      return;
    }
    if (this.decodeChunks(pending)) {
      if (this.held > 0) throw new Http1Error('bytes after a chunked reply', 'HTTP_PROTOCOL');
      this.complete(pending);
      return;
    }
    if (this.held === this.scratch.length) this.growScratch();
    this.target = this.scratch.subarray(this.held);
  }

  /** The head in scratch[0, end) (its blank line included). True for an interim 1xx reply. */
  private readHead(pending: Pending, end: number): boolean {
    const lines = this.scratch.toString('latin1', 0, end - 4).split('\r\n');
    const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0] ?? '');
    if (statusLine === null) {
      throw new Http1Error(
        `not an HTTP/1.x status line: ${JSON.stringify(lines[0])}`,
        'HTTP_PROTOCOL',
      );
    }
    const status = Number(statusLine[2]);
    if (status >= 100 && status < 200) {
      if (status === 101)
        throw new Http1Error('unexpected 101 Switching Protocols', 'HTTP_PROTOCOL');
      return true;
    }
    let contentLength: string | undefined;
    let chunked = false;
    let connection = '';
    let keepAliveHint: string | undefined;
    for (let i = 1; i < lines.length; i += 1) {
      const line = lines[i] as string;
      const colon = line.indexOf(':');
      if (colon <= 0)
        throw new Http1Error(`malformed header line ${JSON.stringify(line)}`, 'HTTP_PROTOCOL');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') {
        if (contentLength !== undefined && contentLength !== value) {
          throw new Http1Error('conflicting content-length headers', 'HTTP_PROTOCOL');
        }
        contentLength = value;
      } else if (name === 'transfer-encoding') {
        chunked = value
          .toLowerCase()
          .split(',')
          .some((coding) => coding.trim() === 'chunked');
      } else if (name === 'connection') {
        connection += `${value.toLowerCase()},`;
      } else if (name === 'keep-alive') {
        keepAliveHint = value;
      }
    }
    pending.status = status;
    pending.keepAlive =
      statusLine[1] === '1' && !connection.split(',').some((o) => o.trim() === 'close');
    const hinted = /(?:^|,)\s*timeout=(\d+)/i.exec(keepAliveHint ?? '');
    if (hinted !== null) this.serverIdleMs = Number(hinted[1]) * 1000;
    if (pending.method === 'HEAD' || status === 204 || status === 304) {
      pending.mode = 'none';
    } else if (chunked) {
      pending.mode = 'chunked';
    } else if (contentLength !== undefined) {
      if (!/^\d{1,15}$/.test(contentLength)) {
        throw new Http1Error(
          `malformed content-length ${JSON.stringify(contentLength)}`,
          'HTTP_PROTOCOL',
        );
      }
      pending.mode = 'length';
      pending.length = Number(contentLength);
    } else {
      pending.mode = 'close';
      pending.keepAlive = false;
    }
    return false;
  }

  /** The body of announced length: what scratch already holds, then reads in place. */
  private startLengthBody(pending: Pending): void {
    const { length } = pending;
    if (this.held > length)
      throw new Http1Error('reply longer than its content-length', 'HTTP_PROTOCOL');
    const pooled = this.pool.take(length);
    pending.pooled = pooled;
    pending.body = pooled;
    this.scratch.copy(pooled, 0, 0, this.held);
    pending.filled = this.held;
    this.held = 0;
    if (pending.filled === length) {
      this.complete(pending);
      return;
    }
    this.target = pooled.subarray(pending.filled, length);
  }

  /** Decodes the chunks scratch holds (what a partial line or chunk needs stays); true once the
   * last chunk and the trailer have been read. */
  private decodeChunks(pending: Pending): boolean {
    const state = pending.chunk;
    const bytes = this.scratch;
    let at = 0;
    for (;;) {
      if (state.phase === 'data') {
        const take = Math.min(state.remaining, this.held - at);
        if (take > 0) pending.pieces.push(Buffer.from(bytes.subarray(at, at + take)));
        at += take;
        state.remaining -= take;
        if (state.remaining > 0) break;
        state.phase = 'crlf';
      }
      if (state.phase === 'crlf') {
        if (this.held - at < 2) break;
        if (bytes[at] !== CR || bytes[at + 1] !== LF) {
          throw new Http1Error('chunk data not followed by CRLF', 'HTTP_PROTOCOL');
        }
        at += 2;
        state.phase = 'size';
      }
      const lineEnd = bytes.subarray(0, this.held).indexOf('\r\n', at, 'latin1');
      if (lineEnd < 0) {
        if (this.held - at > MAX_CHUNK_LINE_BYTES) {
          throw new Http1Error('chunk line too long', 'HTTP_PROTOCOL');
        }
        break;
      }
      const line = bytes.toString('latin1', at, lineEnd);
      at = lineEnd + 2;
      if (state.phase === 'trailer') {
        if (line.length === 0) {
          this.shift(at);
          return true;
        }
        continue;
      }
      const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(line);
      if (size === null)
        throw new Http1Error(`malformed chunk size ${JSON.stringify(line)}`, 'HTTP_PROTOCOL');
      state.remaining = Number.parseInt(size[1] as string, 16);
      state.phase = state.remaining === 0 ? 'trailer' : 'data';
    }
    this.shift(at);
    return false;
  }

  /** Drops scratch's first `count` bytes. */
  private shift(count: number): void {
    if (count === 0) return;
    this.scratch.copy(this.scratch, 0, count, this.held);
    this.held -= count;
  }

  private growScratch(): void {
    const pending = this.pending;
    const inHead = pending !== undefined && pending.status < 0;
    if (inHead && this.scratch.length >= MAX_HEAD_BYTES) {
      throw new Http1Error(`reply head over ${MAX_HEAD_BYTES} bytes`, 'HTTP_PROTOCOL');
    }
    const bigger = Buffer.allocUnsafe(this.scratch.length * 2);
    this.scratch.copy(bigger, 0, 0, this.held);
    this.scratch = bigger;
  }

  private onEnd(): void {
    const pending = this.pending;
    if (pending !== undefined && pending.mode === 'close' && pending.status >= 0) {
      this.complete(pending);
      return;
    }
    this.fail(new Http1Error('connection closed before the reply ended', 'HTTP_PREMATURE_CLOSE'));
  }

  private fail(error: unknown): void {
    this.broken = true;
    const pending = this.pending;
    this.pending = undefined;
    if (pending !== undefined) this.settleFailed(pending, error);
    this.destroy();
  }

  private settleFailed(pending: Pending, error: unknown): void {
    pending.signal.removeEventListener('abort', pending.onAbort);
    // nothing reads into the body's buffer once the socket is destroyed
    if (pending.pooled !== undefined) this.pool.give(pending.pooled);
    pending.reject(error);
  }

  private complete(pending: Pending): void {
    this.pending = undefined;
    pending.signal.removeEventListener('abort', pending.onAbort);
    this.target = this.scratch;
    this.held = 0;
    let bytes: Uint8Array;
    if (pending.mode === 'length') bytes = (pending.body as Buffer).subarray(0, pending.length);
    else if (pending.mode === 'none') bytes = new Uint8Array(0);
    else bytes = Buffer.concat(pending.pieces);
    pending.resolve({ status: pending.status, bytes, pooled: pending.pooled });
    if (pending.keepAlive && !this.broken && !this.socket.destroyed) this.reusable(this);
    else this.destroy();
  }
}

/** The offset after the head's blank line in bytes[0, held), or -1. */
function headEnd(bytes: Buffer, held: number): number {
  const at = bytes.subarray(0, held).indexOf('\r\n\r\n', 0, 'latin1');
  return at >= 0 ? at + 4 : -1;
}

function requestHead(request: Http1Request): string {
  const { url, method, headers, body } = request;
  if (!/^[A-Z]+$/.test(method))
    throw new TypeError(`Http1Agent: bad method ${JSON.stringify(method)}`);
  let head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (name === 'host' || name === 'content-length') continue;
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\0]/.test(value)) {
      throw new TypeError(`Http1Agent: bad header ${JSON.stringify(name)}`);
    }
    head += `${name}: ${value}\r\n`;
  }
  if (body !== null) {
    const length = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
    head += `content-length: ${length}\r\n`;
  }
  return `${head}\r\n`;
}
