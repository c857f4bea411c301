// Slow HTTP clients on raw sockets: a POST whose body trickles in one byte per `everyMs`, kept
// up until the server closes the connection. What the server answered is collected.
import net from 'node:net';

export interface SlowClient {
  /** Everything the server sent. */
  received: () => string;
  /** true once the server closed (or reset) the connection. */
  closed: () => boolean;
  /** ms from the first byte sent to the close; undefined while open. */
  closedAfterMs: () => number | undefined;
  destroy(): void;
}

export function slowBody(
  port: number,
  options: { token?: string; everyMs: number; bodyBytes?: number },
): Promise<SlowClient> {
  const bodyBytes = options.bodyBytes ?? 100_000;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let closedAt: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    const started = Date.now();
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      closedAt = Date.now();
      clearInterval(timer);
    });
    socket.once('connect', () => {
      socket.write(
        `POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${bodyBytes}\r\n` +
          (options.token ? `Authorization: Bearer ${options.token}\r\n` : '') +
          `\r\n{`,
      );
      timer = setInterval(() => {
        if (!socket.destroyed) socket.write(' ');
      }, options.everyMs);
      resolve({
        received: () => text,
        closed: () => closedAt !== undefined,
        closedAfterMs: () => (closedAt === undefined ? undefined : closedAt - started),
        destroy: () => {
          clearInterval(timer);
          socket.destroy();
        },
      });
    });
    socket.once('error', reject);
  });
}

/** The status line's code of the first response in `text`, or undefined. */
export function statusOf(text: string): number | undefined {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return match ? Number(match[1]) : undefined;
}
