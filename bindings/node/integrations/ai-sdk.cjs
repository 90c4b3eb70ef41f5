'use strict';
// `loopguard/ai-sdk`: loop protection for the Vercel AI SDK's tools (ai 5 and later).
//
//   const tools = protectTools({ read, search }, { guard, session: chatId });
//   await generateText({ model, tools, stopWhen: [stepCountIs(50), stopWhen({ guard, session: chatId })] });
//
// Each tool's `execute` is wrapped: a blocked call never runs and throws the block message, which
// the AI SDK gives the model as the tool's error; a warning is added to the result the model sees.
// When the guard ends the run (`loopguard.onCritical: "end-run"`, the next critical loop after an
// "ask", the strict profile's `second_critical_abort`, a loop that survived a context compaction)
// the call throws a `RunEndedError` (its `verdict`: the loop's summary), `stopWhen(...)` ends the
// loop after the step, and `runVerdict(options)` gives the verdict to the program. (The AI SDK
// turns a tool's error into the model's tool result rather than ending `generateText`, hence the
// stop condition.) The package does not import `ai` itself: it works on the tools' plain objects.
const { RunEndedError, verdictOf } = require('../lib/errors.cjs');
const {
  before,
  after,
  isStopped,
  markStopped,
  runVerdict: stoppedVerdict,
  withWarning,
  checkContext,
  refuses,
  endsRun,
  notices,
} = require('./common.cjs');

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
        const session = ctx.session ?? 'default';
        if (isStopped(ctx.guard, session, ctx.run)) {
          const verdict = stoppedVerdict(ctx.guard, session, ctx.run);
          if (verdict) throw new RunEndedError(verdict);
          throw new LoopGuardBlockedError('loopguard stopped this run: a tool-call loop survived a context compaction.', null);
        }
        const decision = await before(ctx, name, input, callId);
        if (endsRun(decision)) {
          const verdict = verdictOf(decision);
          markStopped(ctx.guard, session, ctx.run, decision.message, ctx.logger, verdict);
          throw new RunEndedError(verdict);
        }
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

/**
 * The verdict of the session's run once loopguard ended it (the loop's summary: tool, detector,
 * count, message, session), or null.
 */
function runVerdict(options) {
  checkContext(options, 'runVerdict');
  const { guard, session = 'default', run } = options;
  return stoppedVerdict(guard, session, run);
}

module.exports = { protectTools, stopWhen, runVerdict, LoopGuardBlockedError };
