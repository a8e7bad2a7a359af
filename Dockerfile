# The controller's image. Minimal on purpose: it has not been built on the
# development machine (no container engine there), only written.
#   docker build -t registry.example.com/internal-services:0.1.0 .

# --- build: all dependencies, compile TypeScript, bundle (esbuild) ---
FROM docker.io/library/node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
COPY hack/bundle.mjs ./hack/bundle.mjs
RUN npx tsc -p tsconfig.json && node hack/bundle.mjs


# --- runtime: the bundle only (it holds the code of every dependency it uses) ---
FROM docker.io/library/node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/dist/bundle ./dist/bundle
# The requester CLI on PATH, for tasks/internal-request.yaml (command: internal-services).
RUN chmod +x dist/bundle/internal-services.mjs dist/bundle/kubectl-internalrequest.mjs \
 && ln -s /app/dist/bundle/internal-services.mjs /usr/local/bin/internal-services \
 && ln -s /app/dist/bundle/kubectl-internalrequest.mjs /usr/local/bin/kubectl-internalrequest
# The image's "node" user, by number so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
ENTRYPOINT ["node", "--enable-source-maps", "dist/bundle/internal-services.mjs"]
CMD ["controller"]
