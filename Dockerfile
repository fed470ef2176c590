# The Straggler service: REST API + stream loops (`straggler serve`).
#
#   docker build -t straggler/service:local .
#   docker run -e DATABASE_URL=postgres://… -e STRAGGLER_API_TOKEN=… -p 8080:8080 straggler/service:local
#
# Secrets may come from files instead (DATABASE_URL_FILE, STRAGGLER_API_TOKEN_FILE,
# STRAGGLER_READ_TOKEN_FILE: a Docker or Kubernetes secret). Probes: GET /livez
# (liveness), GET /readyz (readiness: the database answers, migrations applied).
# Logs: JSON lines on stdout. The data folder (/app/.straggler) is a volume.
#
# The image runs the compiled CLI (dist/, scripts/build.mjs): the build only
# strips types with esbuild, which comes with tsx, a runtime dependency, so a
# production install can build and there is no separate build stage. NODE_IMAGE defaults to the official image; where
# no registry is reachable scripts/docker-local.sh builds a local stand-in
# (straggler/node:20-local) and passes it here. Written for both BuildKit and
# the legacy builder (no RUN --mount).
ARG NODE_IMAGE=node:20-bookworm-slim
FROM ${NODE_IMAGE}

ENV NODE_ENV=production \
    PORT=8080 \
    STRAGGLER_DATA_DIR=/app/.straggler
WORKDIR /app

# Dependencies first: this layer is reused until package*.json or the build
# script change (`npm ci` runs it as `prepare`; with no src/ yet it builds nothing).
COPY package.json package-lock.json ./
COPY scripts/build.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=warn \
 && npm cache clean --force

# Sources (owned by root, read-only for the service user).
COPY tsconfig.json ./
COPY bin ./bin
COPY drizzle ./drizzle
COPY jobs ./jobs
COPY pipelines ./pipelines
COPY src ./src
# dist/: src/ and jobs/ compiled, with source maps (bin/straggler.mjs runs it).
RUN node scripts/build.mjs

# The data folder (STRAGGLER_DATA_DIR) holds the embedded PostgreSQL, used only
# when DATABASE_URL is unset; it is a volume, owned by node before VOLUME so a
# new volume starts owned by node. Landing folders are mounted under /data.
RUN mkdir -p /app/.straggler /data/landing && chown node:node /app/.straggler
VOLUME ["/app/.straggler"]

USER node
EXPOSE 8080
# Docker's one health status is readiness (GET /readyz): `healthy` once the
# database answers and the migrations are applied. An orchestrator with two
# probes takes GET /livez for liveness (docs/containers.md "Probes").
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: the service stops gracefully.
# The correction job runs from the same image: node --enable-source-maps dist/jobs/correct.js all
CMD ["node", "bin/straggler.mjs", "serve"]
