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
const { createRequire } = require('node:module');
const path = require('node:path');
const { before, after, isStopped, checkContext, refuses, endsRun, notices } = require('./common.cjs');

const STOPPED = 'loopguard stopped this run: a tool-call loop survived a context compaction.';

/** The first @mastra/core major version whose agents run tool hooks (`new Agent({ hooks })`). */
const MIN_MASTRA_MAJOR = 1;

/**
 * Refuses a Mastra that would ignore the hooks: @mastra/core 0.x accepts `hooks` on an agent and
 * never calls them (npm installs 0.24 on Node 20, since 1.x needs Node 22.13+), so the guard
 * would look installed and do nothing. The version is the one the program's own project
 * resolves (from the working directory); a Mastra that cannot be found is not checked.
 */
function checkMastra() {
  let pkg;
  try {
    const req = createRequire(path.join(process.cwd(), 'package.json'));
    pkg = req('@mastra/core/package.json');
  } catch {
    return;
  }
  const major = Number.parseInt(String(pkg?.version ?? '').split('.')[0], 10);
  if (Number.isInteger(major) && major < MIN_MASTRA_MAJOR) {
    throw new Error(
      `createLoopGuardHooks: @mastra/core ${pkg.version} ignores an agent's tool hooks, so loopguard would never see a call; ` +
        `install @mastra/core ${MIN_MASTRA_MAJOR}.x (it needs Node 22.13 or newer; tested with 1.71.0)`,
    );
  }
}

/**
 * Mastra `ToolHooks` guarding every tool call of an agent, and a `stopWhen` condition.
 * @param {{guard: object, session?: string, run?: string, agent?: string, logger?: object}} options
 */
function createLoopGuardHooks(options) {
  checkContext(options, 'createLoopGuardHooks');
  checkMastra();
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
