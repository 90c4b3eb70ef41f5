'use strict';
// `loopguard/mastra`: loop protection for Mastra agents through their tool hooks.
//
//   const hooks = createLoopGuardHooks({ guard, session: threadId });
//   const agent = new Agent({ ..., hooks });
//   await agent.generate(prompt, { stopWhen: [stepCountIs(50), hooks.stopWhen] });
//
// `beforeToolCall` checks each call: a blocked call does not run, the model gets the block
// message as the tool's output (`{ proceed: false, output }`). `afterToolCall` records the
// outcome (its output, or its error). Mastra's after-hook cannot replace the output, so a warning
// to show is added to an object output as its `loopguard` field (the object the model receives);
// a warning about a string or other non-object output cannot be shown and is logged instead. An
// abort (a loop surviving a compaction) makes `hooks.stopWhen` end the loop, and every later
// call of the run is refused. Nothing is imported from Mastra.
const { before, after, isStopped, checkContext, refuses, endsRun, notices } = require('./common.cjs');

const STOPPED = 'loopguard stopped this run: a tool-call loop survived a context compaction.';

/**
 * Mastra `ToolHooks` guarding every tool call of an agent, and a `stopWhen` condition.
 * @param {{guard: object, session?: string, run?: string, agent?: string, logger?: object}} options
 */
function createLoopGuardHooks(options) {
  checkContext(options, 'createLoopGuardHooks');
  const ctx = { ...options, session: options.session ?? 'default' };
  const logger = ctx.logger ?? console;
  const decisions = new WeakMap(); // the hook context's input object -> before-call decision
  const callIdOf = (context) => context?.toolCallId ?? context?.agent?.toolCallId;
  return {
    beforeToolCall: async ({ toolName, input, context }) => {
      if (isStopped(ctx.guard, ctx.session, ctx.run)) return { proceed: false, output: STOPPED };
      const decision = await before(ctx, toolName, input ?? {}, callIdOf(context));
      if (refuses(decision)) return { proceed: false, output: decision.message };
      if (decision && input !== null && typeof input === 'object') decisions.set(input, decision);
      return undefined;
    },
    afterToolCall: async ({ toolName, input, context, output, error }) => {
      const outcome = await after(ctx, toolName, input ?? {}, callIdOf(context), error !== undefined ? { error } : { result: output });
      const decision = input !== null && typeof input === 'object' ? decisions.get(input) : undefined;
      const shown = endsRun(outcome) ? outcome.message : notices(decision) ? decision.message : null;
      if (shown === null || error !== undefined) return;
      if (output !== null && typeof output === 'object' && !Array.isArray(output) && Object.isExtensible(output)) {
        output.loopguard = shown;
      } else {
        logger.warn(`loopguard: ${toolName}: ${shown} (not shown to the model: the tool's output is not an object)`);
      }
    },
    /** A stop condition for `agent.generate(..., { stopWhen })`: true once the run is aborted. */
    stopWhen: () => isStopped(ctx.guard, ctx.session, ctx.run),
  };
}

module.exports = { createLoopGuardHooks };
