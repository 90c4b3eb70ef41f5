'use strict';
// `loopguard/langchain`: loop protection for LangChain.js agents (`createAgent`, langchain 1.x).
//
//   const agent = createAgent({ model, tools, middleware: [createLoopGuardMiddleware({ guard })] });
//
// Every tool call goes through the guard (`wrapToolCall`): a blocked call does not run and the
// model gets a ToolMessage with the block message and status "error"; a warning is appended to
// the tool's message; the outcome is recorded after the tool ran; an abort ends the agent before
// the model is asked again. The session is the LangGraph thread id (`configurable.thread_id`,
// "default" without one) unless `session` is given. `langchain` is required when the middleware
// is created, not before.
const { build } = require('./langchain-core.cjs');

/**
 * The loopguard middleware for `createAgent({ middleware: [...] })`.
 * @param {{guard: object, session?: string, run?: string, agent?: string, logger?: object}} options
 */
function createLoopGuardMiddleware(options) {
  return build(require('langchain'), options);
}

module.exports = { createLoopGuardMiddleware };
