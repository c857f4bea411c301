// Reads Server-Sent Events over real HTTP (fetch) until a condition holds or the stream ends.
export interface SseEvent {
  id: string;
  event: string;
  data: { type: string; step?: number; to?: string } & Record<string, unknown>;
}

export interface SseRead {
  events: SseEvent[];
  /** true when the server ended the stream (rather than us stopping). */
  ended: boolean;
  status: number;
}

function parseFrame(frame: string): SseEvent | null {
  const fields: Record<string, string> = {};
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
  }
  if (fields.data === undefined || fields.id === undefined) return null;
  return { id: fields.id, event: fields.event ?? 'message', data: JSON.parse(fields.data) };
}

export async function readSse(
  url: string,
  headers: Record<string, string>,
  stop: (events: SseEvent[]) => boolean = () => false,
  timeoutMs = 10_000,
): Promise<SseRead> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const events: SseEvent[] = [];
  try {
    const res = await fetch(url, { headers, signal: controller.signal });
    if (!res.body || res.status !== 200) return { events, ended: true, status: res.status };
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { events, ended: true, status: res.status };
      buffer += decoder.decode(value, { stream: true });
      let boundary = buffer.indexOf('\n\n');
      while (boundary >= 0) {
        const event = parseFrame(buffer.slice(0, boundary));
        buffer = buffer.slice(boundary + 2);
        if (event) events.push(event);
        if (stop(events)) {
          controller.abort();
          return { events, ended: false, status: res.status };
        }
        boundary = buffer.indexOf('\n\n');
      }
    }
  } finally {
    clearTimeout(timer);
  }
}
