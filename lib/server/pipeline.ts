// The whole path of a request, one named stage after another in the order they run.
// A stage answers the request (returns true) or passes it on; nothing after an answering stage runs.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { identityFromClientCertificate } from '../auth/identity.ts';
import { forwardToUpstream } from '../upstream/forward.ts';
import type { ClusterCredentials } from '../upstream/kubeconfig.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { forwardUpgrade } from '../upstream/upgrade.ts';
import type { RequestContext } from './context.ts';
import type { HealthChecks } from './health.ts';
import { malformedRequestTarget } from './request-target.ts';
import { sendStatus, unauthorized, writeRawStatus } from './status.ts';

export interface Stage {
  name: string;
  run(ctx: RequestContext): boolean;
}

export interface PipelineDeps {
  pool: UpstreamPool;
  health: HealthChecks;
}

function validateTarget(ctx: RequestContext): boolean {
  const problem = malformedRequestTarget(ctx.path);
  if (problem !== null) throw problem;
  return false;
}

function authenticate(ctx: RequestContext): boolean {
  ctx.identity = identityFromClientCertificate(ctx.req.socket as TLSSocket);
  if (ctx.identity === null) throw unauthorized();
  return false;
}

/** The stages of `tenantgate serve`, in order. Conversion stages join this list in the tenant issues. */
export function buildPipeline({ pool, health }: PipelineDeps): Stage[] {
  return [
    { name: 'validate request target', run: validateTarget },
    { name: 'health checks', run: (ctx) => health.serve(ctx) },
    { name: 'authenticate', run: authenticate },
    { name: 'forward upstream', run: (ctx) => (forwardToUpstream(ctx, pool), true) },
  ];
}

export function handleRequest(
  stages: Stage[],
  req: Http2ServerRequest | IncomingMessage,
  res: Http2ServerResponse | ServerResponse,
): void {
  const ctx: RequestContext = { req, res, path: req.url ?? '', identity: null };
  try {
    for (let i = 0; i < stages.length; i++) if (stages[i]!.run(ctx)) return;
  } catch (error) {
    sendStatus(res, error);
  }
}

/** HTTP/1.1 Upgrade (exec, attach, port-forward): the same checks, then raw sockets both ways. */
export function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, upstream: ClusterCredentials): void {
  socket.on('error', () => socket.destroy());
  const path = req.url ?? '';
  const problem = malformedRequestTarget(path);
  if (problem !== null) return writeRawStatus(socket, problem);
  const identity = identityFromClientCertificate(req.socket as TLSSocket);
  if (identity === null) return writeRawStatus(socket, unauthorized());
  forwardUpgrade(req, path, socket, head, identity, upstream);
}
