// The ESM entry point of loopguard/langchain: the middleware is built with the ESM `langchain`
// the application's agent uses.
import * as lc from 'langchain';
import core from './langchain-core.cjs';

export function createLoopGuardMiddleware(options) {
  return core.build(lc, options);
}
export default { createLoopGuardMiddleware };
