# syntax=docker/dockerfile:1.7
# Control plane (Fastify REST API, scheduler, /metrics).
# Build from the repository root:
#   docker build -f infra/docker/control-plane.Dockerfile -t anneal/control-plane .
# The image runs compiled JavaScript (`npm run build`: dist/ of every workspace) on the current
# Node LTS, as a non-root user; development keeps running the TypeScript sources through tsx.
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
WORKDIR /app
COPY --from=deps /app ./
COPY --from=build /out/ ./
# Fails the build if a workspace link, its dist/ or a production dependency is missing.
RUN node --input-type=module -e "await import('@anneal/control-plane'); await import('@anneal/telemetry')" \
 && node apps/cli/bin/anneal.js --help > /dev/null
USER node
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ANNEAL_PORT ?? '8080') + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "apps/cli/dist/main.js", "control-plane"]
