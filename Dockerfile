# The controller's image: Node.js 26 (the Active LTS line) and the esbuild bundle of the CLI, no
# node_modules, runs as the non-root user 1000.
#   docker build -t registry.example.com/internal-services:0.1.0 .
#   buildah bud -t registry.example.com/internal-services:0.1.0 .
#
# BASE_IMAGE is the image both stages start from. Its default is the official
# Node.js image, docker.io/library/node:26-trixie-slim: use it. CI cannot
# reach docker.io and builds with a stand-in made the same way (Debian
# trixie, Node.js 26 in /usr/local, user "node" 1000:1000) from Debian
# packages and the npm registry: hack/image/build.sh, docs/image.md.
ARG BASE_IMAGE=docker.io/library/node:26-trixie-slim

# --- build: all dependencies, compile TypeScript, bundle (esbuild) ---
FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci reaches the npm registry. Behind a proxy that intercepts TLS, give
# the build its CA certificates as the secret "ca-certificates" (e.g. docker
# build --secret id=ca-certificates,src=/etc/ssl/certs/ca-certificates.crt):
# they are used for this step only and are not in any layer.
RUN --mount=type=secret,id=ca-certificates \
    if [ -f /run/secrets/ca-certificates ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca-certificates; fi \
 && npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY hack/bundle.mjs ./hack/bundle.mjs
RUN npx tsc -p tsconfig.json && node hack/bundle.mjs


# --- runtime: the bundle only (it holds the code of every dependency it uses) ---
FROM ${BASE_IMAGE}
# git: commits asked for by SHA are checked against their repository from the
# internal side, in a partial clone (src/git/commit-checker.ts); ca-certificates
# for https remotes.
# apt-get clean: a base without the official images' docker-clean hook
# (CI's stand-in, hack/image/build.sh) would keep the downloaded .debs, 114 MB.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends git ca-certificates >/dev/null \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
# Two malloc arenas instead of one per thread (docs/benchmarks.md, "Memory").
ENV NODE_ENV=production MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/dist/bundle ./dist/bundle
# The requester CLI on PATH, for tasks/internal-request.yaml (command: internal-services).
RUN chmod +x dist/bundle/internal-services.mjs dist/bundle/kubectl-internalrequest.mjs \
 && ln -s /app/dist/bundle/internal-services.mjs /usr/local/bin/internal-services \
 && ln -s /app/dist/bundle/kubectl-internalrequest.mjs /usr/local/bin/kubectl-internalrequest
# V8's compiled code of the bundles, made here once (Node.js's compile cache):
# a start then reads the bundle's code instead of parsing and compiling its
# 6 MB again (docs/image.md). Node.js keeps one cache per user id, so it is
# made as the user the image runs as, with the ENTRYPOINT's flags, then
# handed to root and left read-only: Node.js uses what is there, and the
# cache of a bundle, a Node.js or a user id that differs is ignored, never
# wrong.
ENV NODE_COMPILE_CACHE=/app/.node-compile-cache
RUN install -d -o 1000 -g 1000 /app/.node-compile-cache
USER 1000:1000
RUN node --max-semi-space-size=4 dist/bundle/internal-services.mjs --help >/dev/null \
 && node dist/bundle/kubectl-internalrequest.mjs --help >/dev/null
USER 0:0
RUN chown -R 0:0 /app/.node-compile-cache && chmod -R a+rX,go-w /app/.node-compile-cache
# The image's "node" user, by number so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
# A young generation of 2 x 4 MB instead of V8's 2 x 16 MB: the same as the
# Deployment's command (config/manager/manager.yaml). No --enable-source-maps:
# 23 MB for the process's life (docs/image.md says how to turn it on).
ENTRYPOINT ["node", "--max-semi-space-size=4", "dist/bundle/internal-services.mjs"]
CMD ["controller"]
