// One HTTP request through node:http(s), for ApiClient.request. Not fetch: on Node 20 the first
// fetch() initialises undici, about 0.25 s of CPU — more than the rest of `anneal runs ls`
// (bench/startup); a node:http request costs a few milliseconds. Streams (SSE) keep fetch. The
// transport is loaded by the first request, not at start-up: node:https brings TLS, and a command
// such as `anneal --help` sends none.

export interface HttpReply {
  status: number;
  statusText: string;
  text: string;
}

export interface HttpRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

async function transportFor(url: URL) {
  if (url.protocol === 'http:') return (await import('node:http')).default;
  if (url.protocol === 'https:') return (await import('node:https')).default;
  throw new Error(`unsupported protocol ${url.protocol} (use http or https)`);
}

/** Rejects with the socket error (its `code`: ECONNREFUSED, ENOTFOUND…) when there is no reply. */
export async function send(url: URL, init: HttpRequest): Promise<HttpReply> {
  const transport = await transportFor(url);
  const headers =
    init.body === undefined
      ? init.headers
      : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
  return new Promise((resolve, reject) => {
    const request = transport.request(url, { method: init.method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    request.on('error', reject);
    request.end(init.body);
  });
}
