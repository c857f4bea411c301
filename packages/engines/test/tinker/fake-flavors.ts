// How the two real Tinker-compatible servers differ, as the fake trainer reproduces them. Each
// entry names the upstream file it mirrors, read at:
//   SkyRL: github.com/NovaSky-AI/SkyRL @ a9564572eb8e91076be43c1bd5e4615e3de17265
//   tinker SDK: github.com/thinking-machines-lab/tinker @ d595dc2ba62a1494aa0f452fe1d0dbb7b321b870
// (the hosted service itself is closed; the SDK shows what it answers).

export type FakeFlavor = 'skyrl' | 'tinker';

export interface FlavorBehaviour {
  /** A still-pending `retrieve_future`. */
  pending: 'hold-then-408' | 'try_again';
  /** A failed future. */
  failure: '400-detail' | '200-error-category';
  /** Async POST replies carry `status: "pending"` (SkyRL) or only `{request_id, model_id}`. */
  futureStatus: boolean;
  /** create_model answers the model at once (SkyRL) or a future (hosted Tinker). */
  createModel: 'direct' | 'future';
  /** Hosted Tinker's CreateModelRequest requires `model_seq_id`. */
  requiresModelSeqId: boolean;
  /** save_weights / save_weights_for_sampler dedupe by seq_id (Tinker) or not at all (SkyRL
   * creates the checkpoint row first, so a resent save is a 409 "already exists"). */
  savesDedupeBySeqId: boolean;
  /** `AdamParams.grad_clip_norm` is applied (Tinker) or silently dropped (SkyRL). */
  appliesGradClip: boolean;
  /** Sampler path: `tinker://<id>/<name>` (SkyRL) or `tinker://<id>/sampler_weights/<name>`. */
  samplerPathKind: 'bare' | 'sampler_weights';
  /** Archive route's checkpoint segment: `<name>` (SkyRL) or `sampler_weights/<name>`. */
  archiveId: 'bare' | 'sampler_weights';
  /** Where the archive route redirects: SkyRL's own `/download` route, or a signed URL. */
  archiveRedirect: 'download-route' | 'signed-url';
}

export const FLAVORS: Readonly<Record<FakeFlavor, FlavorBehaviour>> = {
  skyrl: {
    // skyrl/tinker/api.py retrieve_future: waits RETRIEVE_FUTURE_TIMEOUT_SECONDS = 300, then
    // HTTPException(408, "Timeout waiting for result"); FAILED rows -> 400 {detail: error}.
    pending: 'hold-then-408',
    failure: '400-detail',
    // skyrl/tinker/api.py FutureResponse(future_id, status="pending", request_id).
    futureStatus: true,
    // skyrl/tinker/api.py create_model returns CreateModelResponse(model_id, …, status="created").
    createModel: 'direct',
    // skyrl/tinker/api.py CreateModelRequest is a plain BaseModel: extra fields are ignored.
    requiresModelSeqId: false,
    // skyrl/tinker/api.py save_weights / save_weights_for_sampler: create_checkpoint() first
    // (409 "Checkpoint '<name>' already exists for model '<id>'"), create_future() without seq_id.
    savesDedupeBySeqId: false,
    // skyrl/tinker/api.py AdamParams has no grad_clip_norm (pydantic drops it); the JAX backend
    // (skyrl/backends/jax.py) never clips; FSDP clips with the server's max_grad_norm.
    appliesGradClip: false,
    // skyrl/tinker/engine.py process_save_weights_for_sampler: f"tinker://{model_id}/{checkpoint_id}".
    samplerPathKind: 'bare',
    // skyrl/tinker/api.py get_checkpoint_archive_url: /training_runs/{id}/checkpoints/{checkpoint_id}/archive
    // (checkpoint_id matches ^[a-zA-Z0-9_-]+$) -> 302 to …/download with an Expires header.
    archiveId: 'bare',
    archiveRedirect: 'download-route',
  },
  tinker: {
    // src/tinker/lib/api_future_impl.py _fetch_via_rest: 200 {"type": "try_again", queue_state}.
    pending: 'try_again',
    // src/tinker/lib/api_future_impl.py: 200 {"error", "category"} -> RequestFailedError.
    failure: '200-error-category',
    // src/tinker/types/shared/untyped_api_future.py: {request_id, model_id?} (no status).
    futureStatus: false,
    // src/tinker/resources/models.py create -> UntypedAPIFuture; result CreateModelResponse.
    createModel: 'future',
    // src/tinker/types/create_model_request.py: model_seq_id: int (required, StrictBase).
    requiresModelSeqId: true,
    // src/tinker/lib/public_interfaces/training_client.py: saves send seq_id like every op;
    // save_state(…, overwrite=False) implies an existing name is refused.
    savesDedupeBySeqId: true,
    // src/tinker/types/optim_step_request.py AdamParams.grad_clip_norm ("0.0 means no clipping").
    appliesGradClip: true,
    // src/tinker/types/checkpoint.py ParsedCheckpointTinkerPath: tinker://<run>/sampler_weights/<id>.
    samplerPathKind: 'sampler_weights',
    // src/tinker/resources/weights.py get_checkpoint_archive_url: checkpoint_id "sampler_weights/<name>",
    // 302 Location (signed URL) + Expires, or 200 {url, expires}; 503 while the archive is built.
    archiveId: 'sampler_weights',
    archiveRedirect: 'signed-url',
  },
};
