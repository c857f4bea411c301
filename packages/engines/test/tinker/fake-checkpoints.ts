// The fake trainer's checkpoint routes: the list, DELETE, the archive route (SkyRL's 302 to its
// own /download route; hosted Tinker's 503 while building, then 302 to a signed URL) and the
// signed download itself. Each behaviour names the upstream file it mirrors (fake-flavors.ts).
import { rmSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { TINKER_API_PREFIX } from '../../src/tinker/wire.ts';
import type * as Wire from '../../src/tinker/wire.ts';
import { fakeAdapterArchive } from './fake-archive.ts';
import type { FlavorBehaviour } from './fake-flavors.ts';

/** What the routes read of a model. */
export interface CheckpointedModel {
  lora: Wire.LoraConfig;
  saved: Map<string, number>;
  sampler: Map<string, number>;
}

export interface CheckpointRoutesDeps {
  behaviour: FlavorBehaviour;
  models: ReadonlyMap<string, CheckpointedModel>;
  url: () => string;
  /** Hosted Tinker flavour: 503s the archive route answers before its redirect. */
  archivePreparing: number;
  /** SkyRL's checkpoint base, where sampler exports are written as files (undefined: none). */
  samplerFilesBase?: string;
}

export class CheckpointRoutes {
  private readonly signed = new Map<string, Buffer>();
  private readonly archives = new Map<string, Buffer>();
  private preparing: number;
  private tokens = 0;

  constructor(private readonly deps: CheckpointRoutesDeps) {
    this.preparing = deps.archivePreparing;
  }

  /** The archive a sampler checkpoint downloads as: a .tar.gz of a LoRA adapter directory. */
  archiveBytes(modelId: string, name: string): Buffer {
    const cached = this.archives.get(`${modelId}/${name}`);
    if (cached) return cached;
    const lora = this.deps.models.get(modelId)?.lora ?? { rank: 1 };
    const hosted = this.deps.behaviour.archiveId === 'sampler_weights';
    const bytes = fakeAdapterArchive(modelId, name, lora, { hosted });
    this.archives.set(`${modelId}/${name}`, bytes);
    return bytes;
  }

  /** GET …/archive, GET …/download (SkyRL), DELETE a checkpoint, GET the list. */
  handle(res: ServerResponse, method: string, route: string): void {
    const list = /^training_runs\/([^/]+)\/checkpoints$/.exec(route);
    if (list && method === 'GET')
      return this.listCheckpoints(res, decodeURIComponent(list[1] as string));
    const match = /^training_runs\/([^/]+)\/checkpoints\/(.+?)(\/archive|\/download)?$/.exec(route);
    const model = match && this.deps.models.get(decodeURIComponent(match[1] as string));
    if (!match || !model) return send(res, 404, { detail: 'Not Found' });
    const modelId = decodeURIComponent(match[1] as string);
    const id = (match[2] as string).split('/').map(decodeURIComponent);
    const kind = id.length === 2 ? id[0] : undefined;
    const name = id[id.length - 1] as string;
    if (method === 'DELETE' && match[3] === undefined) {
      // skyrl/tinker/api.py delete_checkpoint: the type comes from the path prefix; 204.
      if (kind !== 'sampler_weights' && kind !== 'weights') {
        return send(res, 400, { detail: 'Invalid checkpoint identifier.' });
      }
      const store = kind === 'weights' ? model.saved : model.sampler;
      if (!store.delete(name)) {
        return send(res, 404, { detail: `Checkpoint not found: ${modelId}/${name}` });
      }
      // skyrl/tinker/api.py@a9564572e delete_checkpoint_file: only `{name}.tar.gz` is removed,
      // "leave the enclosing directories in place" (and whatever a client unpacked beside it).
      const base = this.deps.samplerFilesBase;
      if (kind === 'sampler_weights' && base !== undefined) {
        rmSync(join(base, modelId, 'sampler_weights', `${name}.tar.gz`), { force: true });
      }
      return void res.writeHead(204).end();
    }
    const wantsPrefix = this.deps.behaviour.archiveId === 'sampler_weights';
    if (method !== 'GET' || (kind === 'sampler_weights') !== wantsPrefix || id.length > 2) {
      return send(res, 404, { detail: 'Not Found' });
    }
    if (!model.sampler.has(name)) {
      return send(res, 404, { detail: `Checkpoint not found: ${modelId}/${name}` });
    }
    const bytes = this.archiveBytes(modelId, name);
    if (match[3] === '/download') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
      return;
    }
    // src/tinker/resources/weights.py: hosted Tinker answers 503 while it builds the archive
    // (SkyRL serves the file it already has).
    if (this.deps.behaviour.archiveRedirect === 'signed-url' && this.preparing > 0) {
      this.preparing -= 1;
      return send(res, 503, { detail: 'Archive is being prepared' });
    }
    const expires = 'Wed, 02 Dec 2026 10:00:00 GMT';
    let location: string;
    if (this.deps.behaviour.archiveRedirect === 'signed-url') {
      const token = `t${++this.tokens}`;
      this.signed.set(token, bytes);
      location = `${this.deps.url()}/signed/${token}?X-Signature=abc`;
    } else {
      location = `${this.deps.url()}${TINKER_API_PREFIX}/training_runs/${modelId}/checkpoints/${name}/download`;
    }
    res.writeHead(302, { location, expires }).end();
  }

  /** skyrl/tinker/api.py list_checkpoints: the model's complete checkpoints with their paths. */
  private listCheckpoints(res: ServerResponse, modelId: string): void {
    const model = this.deps.models.get(modelId);
    if (!model) return send(res, 404, { detail: 'Model not found' });
    const entry = (name: string, type: 'training' | 'sampler') => ({
      checkpoint_id: name,
      checkpoint_type: type,
      time: '2026-12-01T00:00:00Z',
      tinker_path: `tinker://${modelId}/${type === 'training' ? 'weights' : 'sampler_weights'}/${name}`,
    });
    send(res, 200, {
      checkpoints: [
        ...[...model.saved.keys()].map((n) => entry(n, 'training')),
        ...[...model.sampler.keys()].map((n) => entry(n, 'sampler')),
      ],
    });
  }

  /** A signed storage URL: no API key (the client must not send its key to another host). */
  signedDownload(res: ServerResponse, route: string): void {
    const bytes = this.signed.get(route.slice('/signed/'.length));
    if (!bytes) return send(res, 403, { detail: 'signature expired' });
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
