// The LoRA routes of one vLLM replica as weight sync (weight-sync.ts) uses them: what a replica
// lists, unloading a name on either server generation, and how a refused load is reported.
//
// vLLM's engine keeps at most `--max-cpu-loras` adapters (default `--max-loras`) and evicts the
// least recently used one when another is loaded or used; an evicted adapter is re-read from its
// `lora_path` on its next request (vllm/lora/worker_manager.py `LRUCacheWorkerLoRAManager`,
// vllm/config/lora.py). On vLLM main, unloading a name the cache already evicted answers 500
// "Failed to remove lora adapter '<name>' from the engine." and the name stays listed
// (vllm/entrypoints/openai/models/serving.py `unload_lora_adapter`); v0.11 only drops the name.
// Such an unload is no failure: the adapter is loaded in place again (`load_inplace`, main only,
// which is the only generation that answers so) and unloaded at once.
import { ENGINE_ERROR_CODES, EngineError, describeHttpFailure } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { readVllmError, vllmHttpError } from './errors.ts';
import type { Replica } from './replicas.ts';
import type { VllmTransport } from './transport.ts';
import type { LoadLoraAdapterRequest, UnloadLoraAdapterRequest } from './wire.ts';

export const LOAD_LORA_ROUTE = '/v1/load_lora_adapter';
export const UNLOAD_LORA_ROUTE = '/v1/unload_lora_adapter';
export const MODELS_ROUTE = '/v1/models';

/** vLLM main's 500 for an unload of an adapter its LRU cache already evicted. */
const EVICTED = /Failed to remove lora adapter/;
/** `vllm/lora/worker_manager.py`: "LoRA rank R is greater than max_lora_rank M." */
const RANK_TOO_BIG = /LoRA rank (\d+) is greater than max_lora_rank (\d+)/;
/** Reloads in place before an unload of an evicted adapter is given up (another sync may evict
 * it again between the reload and the unload). */
const EVICTED_RELOADS = 2;

/** What became of an unload: `removed`; `gone` (the replica did not list it); `kept` (vLLM main
 * evicted it and it could not be loaded again to be removed: the name stays listed there). */
export type UnloadOutcome = 'removed' | 'gone' | 'kept';

/** GET /v1/models on one replica: adapter name -> its path (`root`). Throws on connection loss
 * or a non-2xx reply. */
export async function listAdapters(
  transport: VllmTransport,
  replica: Replica,
): Promise<Map<string, string>> {
  const reply = await transport.send(replica, 'GET', MODELS_ROUTE, undefined, {
    timeoutMs: transport.config.healthTimeoutMs,
  });
  const context = transport.context(replica.url, MODELS_ROUTE);
  const data = isObject(reply.json) ? reply.json['data'] : undefined;
  if (reply.status !== 200 || !Array.isArray(data)) {
    throw new EngineError(
      ENGINE_ERROR_CODES.response,
      { ...context, status: reply.status },
      `cannot list the loaded adapters: ${reply.status} ${reply.text.slice(0, 200)}`,
      { retryable: true },
    );
  }
  const listed = new Map<string, string>();
  for (const card of data) {
    if (!isObject(card) || typeof card['id'] !== 'string' || card['parent'] == null) continue;
    listed.set(card['id'], typeof card['root'] === 'string' ? card['root'] : '');
  }
  return listed;
}

/** POST /v1/unload_lora_adapter of `adapter` (loaded from `path`). A name the replica does not
 * hold (404/400) is `gone`; vLLM main's 500 for an evicted adapter reloads it in place and
 * unloads again (see the file comment). Connection loss and other 5xx throw (retried first). */
export async function unloadAdapter(
  transport: VllmTransport,
  replica: Replica,
  adapter: string,
  path: string,
): Promise<UnloadOutcome> {
  const body: UnloadLoraAdapterRequest = { lora_name: adapter };
  const timeoutMs = transport.config.syncTimeoutMs;
  let outcome: UnloadOutcome = 'removed';
  let reloads = 0;
  try {
    await transport.direct(replica, UNLOAD_LORA_ROUTE, body, timeoutMs, async (reply) => {
      const info = readVllmError(reply);
      if (reply.status === 500 && EVICTED.test(info.message)) {
        if (reloads < EVICTED_RELOADS && (await reloadInPlace(transport, replica, adapter, path))) {
          reloads += 1;
          return 'send-again';
        }
        outcome = 'kept';
        return 'done';
      }
      if (reply.status === 404 || reply.status === 400) {
        outcome = 'gone';
        return 'done';
      }
      throw vllmHttpError(transport.context(replica.url, UNLOAD_LORA_ROUTE), reply);
    });
  } catch (error) {
    if (error instanceof EngineError && !error.retryable) return 'gone';
    throw error;
  }
  return outcome;
}

/** `load_inplace` of an evicted adapter, so that the engine holds it again; false when the
 * server refuses (its files are gone). */
async function reloadInPlace(
  transport: VllmTransport,
  replica: Replica,
  adapter: string,
  path: string,
): Promise<boolean> {
  const body: LoadLoraAdapterRequest = { lora_name: adapter, lora_path: path, load_inplace: true };
  const reply = await transport.send(replica, 'POST', LOAD_LORA_ROUTE, body, {
    timeoutMs: transport.config.syncTimeoutMs,
  });
  return reply.status >= 200 && reply.status < 300;
}

/** FastAPI's own 404 for a route that is not registered (`{"detail":"Not Found"}`), as opposed
 * to vLLM's NotFoundError envelope for a missing adapter. */
export function isRouteMissing(reply: HttpReply): boolean {
  return isObject(reply.json) && reply.json['detail'] === 'Not Found';
}

/** A healthy server refused this adapter: name, path, the server's words, and a hint for the
 * failures Anneal can predict. */
export function badAdapterError(
  context: ReturnType<VllmTransport['context']>,
  reply: HttpReply,
  version: { name: string; adapter: string; path: string },
): EngineError {
  const info = readVllmError(reply);
  const rank = RANK_TOO_BIG.exec(info.message);
  const hint = rank
    ? ` (start vLLM with --max-lora-rank >= ${rank[1]} and set the endpoint's maxLoraRank, or ` +
      `train with lora.rank <= ${rank[2]})`
    : reply.status === 404
      ? ' (the path must exist on every replica: check the endpoint adapters.root mount)'
      : '';
  return new EngineError(
    ENGINE_ERROR_CODES.badAdapter,
    { ...context, status: reply.status, serverMessage: info.message, serverType: info.type },
    `adapter '${version.name}' (vLLM name '${version.adapter}', path ${version.path}) was ` +
      `rejected: ${describeHttpFailure(reply.status, info.type, info.message)}${hint}`,
  );
}
