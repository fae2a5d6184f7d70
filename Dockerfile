# syntax=docker/dockerfile:1
# Trellis in a container: the packages are packed from this checkout and installed with plain npm,
# the same commands the packaging test (test/packaging.int.spec.ts) runs on every CI build. The
# image build itself is not exercised in CI (no image pulls there); see docs/operations.md.
#
#   docker build -t trellis .
#   docker compose up            # host, worker, PostgreSQL and Redis (compose.yaml)

ARG NODE_IMAGE=node:20-bookworm

# 1. Build every package and pack it into a tarball, as `pnpm pack` publishes it.
FROM ${NODE_IMAGE} AS pack
WORKDIR /src
COPY . .
RUN npx -y pnpm@10 install --frozen-lockfile \
 && npx -y pnpm@10 run build \
 && npx -y pnpm@10 -r --filter "./packages/**" pack --pack-destination /tarballs

# 2. An application that installs the tarballs with npm, like a user's: the CLI, the host, the
#    kernel and only the adapters this deployment uses (the host imports them on demand). Native
#    modules (sqlite3) use a prebuilt binary or compile here: this image has Python, make and g++.
FROM ${NODE_IMAGE} AS install
ARG TRELLIS_ADAPTERS="db-sqlite db-postgres pubsub-redis ratelimit-redis queue-bullmq"
WORKDIR /app
COPY --from=pack /tarballs /tarballs
RUN echo '{"name":"trellis-app","private":true,"type":"module"}' > package.json \
 && npm install --omit=dev --no-audit --no-fund \
      $(for name in cli core host $TRELLIS_ADAPTERS; do ls /tarballs/trellis-$name-*.tgz; done) \
 && npm cache clean --force

# 3. The runtime: the installed application on the slim image of the same Node.js and Debian.
FROM ${NODE_IMAGE}-slim AS runtime
ENV NODE_ENV=production \
    TRELLIS_HOST=0.0.0.0 \
    TRELLIS_PORT=8080
WORKDIR /app
COPY --from=install --chown=node:node /app /app
# A place for a SQLite database (mount a volume here: TRELLIS_DATABASE=sqlite:/app/data/trellis.db).
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
ENTRYPOINT ["node", "/app/node_modules/@trellis/cli/dist/bin.js"]
CMD ["start"]
