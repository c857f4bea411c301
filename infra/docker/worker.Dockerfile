# syntax=docker/dockerfile:1.7
# Worker (BullMQ consumer driving vLLM / Tinker / embedded engines; /metrics).
# Build from the repository root:
#   docker build -f infra/docker/worker.Dockerfile -t anneal/worker .
# The image runs compiled JavaScript (`npm run build`: dist/ of every workspace) on the current
# Node LTS, as a non-root user; development keeps running the TypeScript sources through tsx.
# The `anneal` bin (apps/cli/bin/anneal.js, the CLI bundle) is in it for the preStop hook.
ARG NODE_IMAGE=node:24-bookworm-slim

# 1. Only the package manifests, so the npm ci layers below stay cached until a manifest changes.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN find . -path ./node_modules -prune -o -type f ! -name package.json ! -name package-lock.json -print0 \
      | xargs -0 rm -f \
 && find . -depth -type d -empty -delete

# 2. Build: every dependency (TypeScript, esbuild), the sources, `npm run build` (tsc -b to each
#    workspace's dist/, plus the CLI bundle). Only package.json + dist/ of each workspace (and the
#    `anneal` bin) leave this stage, gathered under /out.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY --from=manifests /src/ ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN node scripts/build.mjs \
 && for ws in packages/* apps/*; do \
      mkdir -p "/out/$ws" && cp "$ws/package.json" "/out/$ws/" && cp -R "$ws/dist" "/out/$ws/dist"; \
    done \
 && cp -R apps/cli/bin /out/apps/cli/bin

# 3. Production dependencies (onnxruntime-node's install script must not download CUDA libraries).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY --from=manifests /src/ ./
RUN npm ci --omit=dev --no-audit --no-fund

# 4. Runtime: production node_modules + compiled JavaScript; no sources, no TypeScript tooling.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# A worker lives for months (docs/reliability.md "A long-lived worker"): glibc's malloc makes up to
# 8 arenas per core and onnxruntime's intra-op threads allocate from their own, so on a many-core
# node freed native memory stays spread over arenas the process never gives back; two arenas
# bound that. V8's old space is capped so that a leak fails the worker (restarted; its runs retry
# from their checkpoints) instead of growing into the node's memory: raise it with NODE_OPTIONS
# for large GRPO batches.
ENV MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS=--max-old-space-size=1536
WORKDIR /app
COPY --from=deps /app ./
COPY --from=build /out/ ./
# Fails the build if a workspace link, its dist/ or a production dependency is missing.
RUN node --input-type=module -e "await import('@anneal/worker'); await import('@anneal/engines')" \
 && node apps/cli/bin/anneal.js --help > /dev/null
# Checkpoints and artifacts (mount shared storage here so another worker can resume a run).
RUN mkdir -p /var/lib/anneal/artifacts && chown -R node:node /var/lib/anneal
USER node
EXPOSE 9464
# On SIGTERM the worker stops taking runs, checkpoints at a step boundary and exits; give it
# the time to (stop_grace_period in compose, terminationGracePeriodSeconds in Kubernetes).
STOPSIGNAL SIGTERM
CMD ["node", "apps/worker/dist/main.js"]
