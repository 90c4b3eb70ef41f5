'use strict';
// `loopguard/openai-agents`: loop protection for the OpenAI Agents SDK for JavaScript
// (@openai/agents), as tool input and output guardrails.
//
//   protectAgent(agent, { guard, session: conversationId });   // every function tool of the agent
//   // or per tool: tool({ ..., inputGuardrails: [g.input], outputGuardrails: [g.output] })
//   const g = loopGuardToolGuardrails({ guard, session });
//
// The input guardrail checks the call: a block is `rejectContent` (the tool does not run and the
// model gets the block message). The output guardrail records the outcome: a warning to show is
// added to the output the model sees (by `rejectContent` with the output and the warning). When
// the guard ends the run (`loopguard.onCritical: "end-run"`, the next critical loop after an
// "ask", the strict profile's `second_critical_abort`, a loop that survived a context compaction)
// the guardrail is `throwException`: the run ends with the SDK's tool guardrail tripwire error
// (`run()` rejects with a `ToolCallError` whose `error` it is), whose `result.output.outputInfo`
// is the loop's verdict (`verdictOf`: tool, detector, count, message, session). The guardrails are the SDK's plain guardrail objects: nothing is imported
// from it.
const { verdictOf } = require('../lib/errors.cjs');
const { before, after, isStopped, markStopped, runVerdict, checkContext, refuses, endsRun, notices } = require('./common.cjs');

const allow = () => ({ behavior: { type: 'allow' } });
const reject = (message, outputInfo) => ({ outputInfo, behavior: { type: 'rejectContent', message } });
const raise = (outputInfo) => ({ outputInfo, behavior: { type: 'throwException' } });

function parseArgs(text) {
  if (typeof text !== 'string') return text ?? {};
  try {
    return JSON.parse(text);
  } catch {
    return text; // what the model wrote, hashed as a string
  }
}

/**
 * The input and output tool guardrails of one session.
 * @param {{guard: object, session?: string, run?: string, agent?: string, logger?: object}} options
 * @returns {{input: object, output: object}}
 */
function loopGuardToolGuardrails(options) {
  checkContext(options, 'loopGuardToolGuardrails');
  const ctx = { ...options, session: options.session ?? 'default' };
  const pending = new Map(); // callId -> the before-call decision
  const input = {
    type: 'tool_input',
    name: 'loopguard',
    run: async ({ toolCall }) => {
      if (isStopped(ctx.guard, ctx.session, ctx.run)) {
        return raise(runVerdict(ctx.guard, ctx.session, ctx.run) ?? { stopped: true });
      }
      const args = parseArgs(toolCall.arguments);
      const decision = await before(ctx, toolCall.name, args, toolCall.callId);
      if (endsRun(decision)) {
        const verdict = verdictOf(decision);
        markStopped(ctx.guard, ctx.session, ctx.run, decision.message, ctx.logger, verdict);
        return raise(verdict);
      }
      if (refuses(decision)) return reject(decision.message, decision);
      if (toolCall.callId) pending.set(toolCall.callId, decision);
      return allow();
    },
  };
  const output = {
    type: 'tool_output',
    name: 'loopguard',
    run: async ({ toolCall, output: result }) => {
      const decision = pending.get(toolCall.callId) ?? null;
      pending.delete(toolCall.callId);
      const outcome = await after(ctx, toolCall.name, parseArgs(toolCall.arguments), toolCall.callId, { result });
      if (endsRun(outcome)) return raise(verdictOf(outcome));
      if (notices(decision)) {
        const shown = typeof result === 'string' ? result : JSON.stringify(result);
        return reject(`${shown}\n\n${decision.message}`, decision);
      }
      return allow();
    },
  };
  return { input, output };
}

/**
 * Adds the guardrails to every function tool of `agent` (and returns it).
 * @param {object} agent an `Agent` of @openai/agents
 */
function protectAgent(agent, options) {
  const { input, output } = loopGuardToolGuardrails(options);
  for (const tool of agent?.tools ?? []) {
    if (tool?.type !== 'function') continue;
    tool.inputGuardrails = [...(tool.inputGuardrails ?? []), input];
    tool.outputGuardrails = [...(tool.outputGuardrails ?? []), output];
  }
  return agent;
}

module.exports = { loopGuardToolGuardrails, protectAgent };
