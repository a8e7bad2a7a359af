# The controller's image. Minimal on purpose: it has not been built on the
# development machine (no container engine there), only written.
#   docker build -t registry.example.com/internal-services:0.1.0 .

# --- build: all dependencies, compile TypeScript ---
FROM docker.io/library/node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
RUN npx tsc -p tsconfig.json

# --- runtime: production dependencies and the compiled code only ---
FROM docker.io/library/node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
# The requester CLI on PATH, for tasks/internal-request.yaml (command: internal-services).
RUN chmod +x dist/src/cli/main.js dist/src/cli/kubectl-internalrequest.js \
 && ln -s /app/dist/src/cli/main.js /usr/local/bin/internal-services \
 && ln -s /app/dist/src/cli/kubectl-internalrequest.js /usr/local/bin/kubectl-internalrequest
# The image's "node" user, by number so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["controller"]
