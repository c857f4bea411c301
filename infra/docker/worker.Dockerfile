# syntax=docker/dockerfile:1.7
# Worker (BullMQ consumer driving vLLM / Tinker / embedded engines; /metrics).
# Build from the repository root:
#   docker build -f infra/docker/worker.Dockerfile -t anneal/worker .
# Anneal ships TypeScript sources and runs them with tsx (`node --import tsx`); there is no
# build step, so the image is: production dependencies + tsx + sources, running as a non-root user.
ARG NODE_IMAGE=node:20.20-bookworm-slim

# 1. Only the package manifests, so the npm ci layers below stay cached until a manifest changes.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN find . -path ./node_modules -prune -o -type f ! -name package.json ! -name package-lock.json -print0 \
      | xargs -0 rm -f \
 && find . -depth -type d -empty -delete

# 2. Full install, only to take tsx (a dev dependency of the monorepo) from it.
FROM ${NODE_IMAGE} AS deps-dev
WORKDIR /app
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY --from=manifests /src/ ./
RUN npm ci --no-audit --no-fund

# 3. Production dependencies (onnxruntime-node's install script must not download CUDA libraries).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY --from=manifests /src/ ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY --from=deps-dev /app/node_modules/tsx ./node_modules/tsx
COPY --from=deps-dev /app/node_modules/esbuild ./node_modules/esbuild
COPY --from=deps-dev /app/node_modules/@esbuild ./node_modules/@esbuild

# 4. Runtime.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app ./
COPY . .
# Fails the build if tsx or a workspace link is missing.
RUN node --import tsx -e "await import('@anneal/telemetry'); await import('@anneal/protocol')"
# Checkpoints and artifacts (mount shared storage here so another worker can resume a run).
RUN mkdir -p /var/lib/anneal/artifacts && chown -R node:node /var/lib/anneal
USER node
EXPOSE 9464
# On SIGTERM the worker stops taking runs, checkpoints at a step boundary and exits; give it
# the time to (stop_grace_period in compose, terminationGracePeriodSeconds in Kubernetes).
STOPSIGNAL SIGTERM
CMD ["node", "--import", "tsx", "apps/worker/src/main.ts"]
