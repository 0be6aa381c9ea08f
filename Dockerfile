# tenantgate: build with TypeScript on Node 24, run the compiled JavaScript as a non-root user.
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY lib ./lib
COPY workers ./workers
# Only the server and its worker tasks are compiled (tsconfig.build.json); tests and bench stay out of the image.
# Call tsc with the image's Node directly: npm scripts would prefer the node@24 binary from node_modules.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json && node lib/assemble-wasm.ts && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
USER node
EXPOSE 6443
ENTRYPOINT ["node", "--max-semi-space-size=1", "--initial-old-space-size=64", "/app/dist/lib/cli.js"]
CMD ["serve", "--listen", "0.0.0.0:6443"]
