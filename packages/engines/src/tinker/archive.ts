/**
 * Downloading a sampler export out of the trainer service (docs/engines.md "Hosted Tinker"),
 * for pairing hosted training with a vLLM of one's own. Route, as the tinker SDK reads it
 * (resources/weights.py get_checkpoint_archive_url):
 *
 *   GET /api/v1/training_runs/<model_id>/checkpoints/<checkpoint_id>/archive
 *     302 Location: <signed URL>, Expires: <http date>   (today's contract)
 *     200 {url, expires}                                 (announced contract)
 *     503 while the archive is being built               (retry later)
 *
 * `<checkpoint_id>` is `sampler_weights/<name>` on hosted Tinker and the bare `<name>` on SkyRL
 * (skyrl/tinker/api.py, whose 302 points at its own `/download` route); the other form is tried
 * after a 404. The signed URL is fetched without the API key when it is on another origin. The
 * archive lands at `<destDir>/<model_id>/sampler_weights/<name>.tar.gz` (SkyRL's layout), written
 * to a temporary file and renamed, so a reader never sees half an archive.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import { backoffDelay } from '../http/retry.ts';
import { linkSignals, realTimers, seededRng } from '../http/timing.ts';
import type { Rng, Timers } from '../http/timing.ts';
import { AdapterError } from '../adapters/errors.ts';
import { type AdapterModules, stateAdapterTargets } from '../adapters/peft-modules.ts';
import { prepareSamplerWeights } from '../adapters/prepare.ts';
import type { PreparedSamplerWeights } from '../adapters/prepare.ts';
import { resolveTinkerConnection } from './config.ts';
import type { ResolvedTinkerConnection, TinkerConnectionConfig } from './config.ts';
import { TINKER_API_PREFIX, checkpointRoute, parseSamplerPath } from './wire.ts';

export interface ArchiveDownloadOptions {
  /** Which checkpoint id form to try first (default `tinker`: `sampler_weights/<name>`). */
  server?: 'tinker' | 'skyrl';
  /** Injectable time (tests). The archive route uses the endpoint's requestTimeoutMs per call;
   * waiting for the archive and downloading it are bounded by its operation deadline. */
  timers?: Timers;
  rng?: Rng;
  signal?: AbortSignal;
}

export interface DownloadedArchive {
  /** `<destDir>/<model_id>/sampler_weights/<name>.tar.gz` */
  path: string;
  bytes: number;
  /** When the signed URL expired, as the server said (undefined when it did not). */
  expires?: string;
}

/** Downloads the archive of the sampler export at `samplerPath` (a `tinker://` path). */
export async function downloadSamplerArchive(
  endpoint: TinkerConnectionConfig,
  samplerPath: string,
  destDir: string,
  options: ArchiveDownloadOptions = {},
): Promise<DownloadedArchive> {
  const config = resolveTinkerConnection(endpoint);
  const parsed = parseSamplerPath(samplerPath);
  if (!parsed) {
    throw new RangeError(
      `downloadSamplerArchive: ${JSON.stringify(samplerPath)} is not tinker://<model_id>/<name> ` +
        'or tinker://<model_id>/sampler_weights/<name>',
    );
  }
  const ctx = new ArchiveContext(config, options);
  const link = await ctx.archiveLink(parsed.modelId, parsed.name);
  const dir = join(destDir, parsed.modelId, 'sampler_weights');
  const path = join(dir, `${parsed.name}.tar.gz`);
  await mkdir(dir, { recursive: true });
  const partial = `${path}.partial-${process.pid}-${Math.floor(ctx.rng() * 1e9)}`;
  try {
    await ctx.download(link.url, partial);
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  const bytes = (await stat(path)).size;
  return { path, bytes, ...(link.expires !== undefined && { expires: link.expires }) };
}

/** Downloads the archive and unpacks it (packages/engines/src/adapters): the directory a vLLM
 * server can load, with its kind (`lora` / `full`) and LoRA rank. */
/**
 * Downloads, unpacks and checks a sampler export: a hosted Tinker archive must hold
 * `checkpoint_complete`; a LoRA adapter's tensors must adapt only modules the base model can
 * (else AdapterError `unservable-modules`), and its adapter_config.json is rewritten to state
 * them (`target_modules` from the keys; adapters/peft-modules.ts). `options.backend` names the
 * trainer backend (SkyRL JAX's MoE expert adapters are refused: their scale is not α/r).
 */
export async function fetchSamplerWeights(
  endpoint: TinkerConnectionConfig,
  samplerPath: string,
  destDir: string,
  options: ArchiveDownloadOptions & { backend?: string } = {},
): Promise<PreparedSamplerWeights & { downloaded: DownloadedArchive; modules?: AdapterModules }> {
  const downloaded = await downloadSamplerArchive(endpoint, samplerPath, destDir, options);
  const prepared = await prepareSamplerWeights(downloaded.path);
  if (prepared.kind !== 'lora') return { ...prepared, downloaded };
  if ((options.server ?? 'tinker') === 'tinker') await requireComplete(prepared.dir);
  const modules = await stateAdapterTargets(prepared.dir, {
    ...(options.backend !== undefined && { backend: options.backend }),
  });
  return { ...prepared, modules, downloaded };
}

/** Hosted Tinker marks a finished archive with `checkpoint_complete`; the SDK refuses one
 * without it (tinker cli/commands/checkpoint.py@d595dc2b `_export_checkpoint_to_hub`). */
async function requireComplete(dir: string): Promise<void> {
  const found = await stat(join(dir, 'checkpoint_complete')).then(
    (info) => info.isFile(),
    () => false,
  );
  if (!found) {
    throw new AdapterError(
      'incomplete',
      dir,
      "has no 'checkpoint_complete': the adapter files may be incomplete (as the tinker SDK " +
        'refuses it)',
    );
  }
}

class ArchiveContext {
  readonly timers: Timers;
  readonly rng: Rng;
  private readonly deadline: number;

  constructor(
    readonly config: ResolvedTinkerConnection,
    private readonly options: ArchiveDownloadOptions,
  ) {
    this.timers = options.timers ?? realTimers;
    this.rng = options.rng ?? seededRng(config.jitterSeed);
    this.deadline = this.timers.now() + config.futurePoll.deadlineMs;
  }

  /** The signed URL of the archive: redirect or JSON; 503s waited out until the deadline. */
  async archiveLink(modelId: string, name: string): Promise<{ url: string; expires?: string }> {
    const forms = [`sampler_weights/${name}`, name];
    if (this.options.server === 'skyrl') forms.reverse();
    let notFound = '';
    for (const form of forms) {
      const route = `${checkpointRoute(modelId, form)}/archive`;
      for (let retry = 0; ; retry += 1) {
        const response = await this.fetch(route, this.config.requestTimeoutMs);
        const text = response.status >= 300 && response.status < 400 ? '' : await response.text();
        if (response.status >= 300 && response.status < 400) {
          const location = response.headers.get('location');
          if (!location) throw this.error(route, response.status, 'redirect without Location');
          const expires = response.headers.get('expires') ?? undefined;
          return { url: new URL(location, this.config.baseUrl).href, ...(expires && { expires }) };
        }
        if (response.status === 200) return this.readLink(route, text);
        if (response.status === 404) {
          notFound = detailOf(text);
          break;
        }
        if (response.status === 503 || response.status === 429 || response.status >= 500) {
          await this.wait(route, retry, response.status, detailOf(text));
          continue;
        }
        throw this.error(route, response.status, detailOf(text));
      }
    }
    throw this.error(
      `${checkpointRoute(modelId, `sampler_weights/${name}`)}/archive`,
      404,
      `no archive for sampler checkpoint ${modelId}/${name} (tried sampler_weights/${name} and ${name}): ${notFound}`,
    );
  }

  async download(url: string, file: string): Promise<void> {
    const sameOrigin = new URL(url).origin === new URL(this.config.baseUrl).origin;
    const timeout = this.timers.timeoutSignal(Math.max(1, this.deadline - this.timers.now()));
    const linked = linkSignals(timeout, this.options.signal);
    try {
      const response = await fetch(url, {
        headers: sameOrigin && this.config.apiKey ? { 'x-api-key': this.config.apiKey } : {},
        signal: linked.signal,
      });
      if (response.status !== 200 || !response.body) {
        const detail = detailOf(await response.text());
        throw new EngineError(
          ENGINE_ERROR_CODES.http,
          {
            engine: 'trainer',
            endpoint: this.config.name,
            url: redact(url),
            status: response.status,
            serverMessage: detail,
          },
          `archive download failed: HTTP ${response.status}: ${detail}`,
        );
      }
      await pipeline(
        Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>),
        createWriteStream(file),
      );
    } catch (error) {
      if (error instanceof EngineError) throw error;
      throw new EngineError(
        timeout.aborted ? ENGINE_ERROR_CODES.timeout : ENGINE_ERROR_CODES.connection,
        { engine: 'trainer', endpoint: this.config.name, url: redact(url) },
        `archive download failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    } finally {
      linked.dispose();
    }
  }

  private async fetch(route: string, timeoutMs: number): Promise<Response> {
    const timeout = this.timers.timeoutSignal(timeoutMs);
    const linked = linkSignals(timeout, this.options.signal);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.config.apiKey) headers['x-api-key'] = this.config.apiKey;
    try {
      return await fetch(`${this.config.baseUrl}${TINKER_API_PREFIX}/${route}`, {
        headers,
        redirect: 'manual',
        signal: linked.signal,
      });
    } catch (error) {
      throw new EngineError(
        timeout.aborted ? ENGINE_ERROR_CODES.timeout : ENGINE_ERROR_CODES.connection,
        this.context(route),
        `archive route failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    } finally {
      linked.dispose();
    }
  }

  private readLink(route: string, text: string): { url: string; expires?: string } {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!isObject(body) || typeof body['url'] !== 'string') {
      throw this.error(route, 200, `archive reply has no url: ${text.slice(0, 200)}`);
    }
    const expires = typeof body['expires'] === 'string' ? body['expires'] : undefined;
    return { url: body['url'], ...(expires && { expires }) };
  }

  private async wait(route: string, retry: number, status: number, detail: string) {
    const remaining = this.deadline - this.timers.now();
    if (remaining <= 0) {
      throw this.error(route, status, `archive still not ready at the deadline: ${detail}`);
    }
    const delay = Math.min(backoffDelay(this.config.retry, retry, this.rng), remaining);
    await this.timers.sleep(delay, this.options.signal);
  }

  private context(route: string) {
    return {
      engine: 'trainer' as const,
      endpoint: this.config.name,
      url: this.config.baseUrl,
      route: `${TINKER_API_PREFIX}/${route}`,
    };
  }

  private error(route: string, status: number, detail: string): EngineError {
    return new EngineError(
      ENGINE_ERROR_CODES.http,
      { ...this.context(route), status, serverMessage: detail },
      `HTTP ${status}: ${detail}`,
    );
  }
}

function detailOf(text: string): string {
  try {
    const body: unknown = JSON.parse(text);
    if (isObject(body) && typeof body['detail'] === 'string') return body['detail'];
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 300) || '(empty body)';
}

/** A signed URL without its query (the signature is a credential). */
function redact(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}
