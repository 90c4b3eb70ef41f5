'use strict';
// `loopguard/ai-sdk`: loop protection for the Vercel AI SDK's tools (ai 5 and later).
//
//   const tools = protectTools({ read, search }, { guard, session: chatId });
//   await generateText({ model, tools, stopWhen: [stepCountIs(50), stopWhen({ guard, session: chatId })] });
//
// Each tool's `execute` is wrapped: a blocked call never runs and throws the block message, which
// the AI SDK gives the model as the tool's error; a warning is added to the result the model sees;
// an abort (the loop survived a context compaction) makes `stopWhen(...)` end the loop after the
// step. The package does not import `ai` itself: it works on the tools' plain objects.
const { before, after, isStopped, withWarning, checkContext, refuses, endsRun, notices } = require('./common.cjs');

/** The error a blocked call throws (the model receives its message). */
class LoopGuardBlockedError extends Error {
  constructor(message, decision) {
    super(message);
    this.name = 'LoopGuardBlockedError';
    this.decision = decision;
  }

  /** The message alone: what the AI SDK shows the model as the tool's error. */
  toString() {
    return this.message;
  }
}

/**
 * The tools with each `execute` guarded.
 * @param {Record<string, object>} tools an AI SDK ToolSet
 * @param {{guard: object, session?: string, run?: string, agent?: string, logger?: object}} options
 */
function protectTools(tools, options) {
  checkContext(options, 'protectTools');
  if (tools === null || typeof tools !== 'object') throw new TypeError('protectTools: tools must be an object of tools');
  const ctx = { ...options };
  const out = {};
  for (const [name, tool] of Object.entries(tools)) {
    if (tool === null || typeof tool !== 'object' || typeof tool.execute !== 'function') {
      out[name] = tool; // a client-side tool: nothing runs here to guard
      continue;
    }
    const execute = tool.execute;
    out[name] = {
      ...tool,
      execute: async (input, execOptions) => {
        const callId = execOptions?.toolCallId;
        if (isStopped(ctx.guard, ctx.session ?? 'default', ctx.run)) {
          throw new LoopGuardBlockedError('loopguard stopped this run: a tool-call loop survived a context compaction.', null);
        }
        const decision = await before(ctx, name, input, callId);
        if (refuses(decision)) throw new LoopGuardBlockedError(decision.message, decision);
        let result;
        try {
          result = await execute.call(tool, input, execOptions);
        } catch (error) {
          await after(ctx, name, input, callId, { error });
          throw error;
        }
        const outcome = await after(ctx, name, input, callId, { result });
        if (endsRun(outcome)) return withWarning(result, outcome.message);
        if (notices(decision)) return withWarning(result, decision.message);
        return result;
      },
    };
  }
  return out;
}

/**
 * A stop condition for `generateText`/`streamText`/agents (`stopWhen`): true once an abort has
 * stopped the session's run.
 */
function stopWhen(options) {
  checkContext(options, 'stopWhen');
  const { guard, session = 'default', run } = options;
  return () => isStopped(guard, session, run);
}

module.exports = { protectTools, stopWhen, LoopGuardBlockedError };
