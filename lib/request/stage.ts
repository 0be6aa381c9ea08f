// One step of the request pipeline (lib/request/pipeline.ts runs them in order). A leaf module: stages name this
// type without importing the pipeline that runs them.
import type { RequestContext } from './context.ts';

export interface Stage {
  name: string;
  /** Runs the step: true once it has answered the request (the pipeline stops there), false to go on. */
  run(ctx: RequestContext): boolean | Promise<boolean>;
}
