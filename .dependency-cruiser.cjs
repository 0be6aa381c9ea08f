// The layering the module headers promise, checked on every `npm test` (npm run lint:deps). Paths are from the
// repository root; a rule names what a layer may not import, so a new module inherits its folder's rules.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes import order decide what is initialised: break it with a smaller module. (Type-only imports are erased: a stage naming the Stage type of the pipeline that runs it is no cycle.)',
      from: { path: '^(lib|workers)/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'convert-is-pure',
      severity: 'error',
      comment: 'Conversion is pure functions over bytes and objects: no HTTP, streams, requests, upstream, tenants or caches.',
      from: { path: '^lib/convert/' },
      to: { path: '^lib/(server|request|stream|upstream|tenants|auth|watchcache|flowcontrol|metrics|rig)/' },
    },
    {
      name: 'errors-stand-alone',
      severity: 'error',
      comment: 'The Status errors every layer throws depend on no layer.',
      from: { path: '^lib/errors/' },
      to: { path: '^lib/(?!errors/)' },
    },
    {
      name: 'upstream-knows-no-tenants',
      severity: 'error',
      comment: 'The upstream client talks to the apiserver; tenants, requests and the HTTP server are above it.',
      from: { path: '^lib/upstream/' },
      to: { path: '^lib/(tenants|request|server|watchcache|flowcontrol)/' },
    },
    {
      name: 'stream-below-requests',
      severity: 'error',
      comment: 'The list and watch rewriters are used by requests and the cache, never the other way round.',
      from: { path: '^lib/stream/' },
      to: { path: '^lib/(request|server|watchcache|tenants)/' },
    },
    {
      name: 'request-below-server',
      severity: 'error',
      comment: 'The server is the edge (listener, shutdown, rapid reset) that runs requests; no request stage reaches back up to it.',
      from: { path: '^lib/(request|watchcache|flowcontrol|tenants|auth)/' },
      to: { path: '^lib/server/' },
    },
    {
      name: 'workers-no-request-layer',
      severity: 'error',
      comment: 'Worker threads convert bytes (with the discovery tables they are given); they never see a request or the server.',
      from: { path: '^workers/' },
      to: { path: '^lib/(request|server|watchcache|flowcontrol)/' },
    },
    {
      name: 'lib-not-from-tests',
      severity: 'error',
      comment: 'The product never imports tests or the bench.',
      from: { path: '^(lib|workers)/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/|^dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
