'use strict';
// The LangChain.js middleware, given the `langchain` module (the CommonJS and ESM entry points
// each pass their own, so the middleware and the agent share one copy of LangChain's classes).
const { before, after, isStopped, checkContext, refuses, endsRun, notices } = require('./common.cjs');

/** A ToolMessage's content in OpenClaw's tool-result shape ({ content: [...] }). */
function contentResult(content) {
  if (typeof content === 'string') return { content: [{ type: 'text', text: content }] };
  return { content };
}

function withWarning(lc, message, warning, status) {
  const content = message.content;
  const next =
    typeof content === 'string'
      ? content
        ? `${content}\n\n${warning}`
        : warning
      : [...content, { type: 'text', text: warning }];
  return new lc.ToolMessage({
    content: next,
    tool_call_id: message.tool_call_id,
    name: message.name,
    artifact: message.artifact,
    status: status ?? message.status,
  });
}

function build(lc, options) {
  checkContext(options, 'createLoopGuardMiddleware');
  const { guard, run, agent } = options;
  const sessionOf = (runtime) => options.session ?? runtime?.configurable?.thread_id ?? 'default';
  return lc.createMiddleware({
    name: 'LoopGuardMiddleware',
    // An aborted run ends the agent before the model is asked again.
    beforeModel: {
      canJumpTo: ['end'],
      hook: (_state, runtime) => (isStopped(guard, sessionOf(runtime), run) ? { jumpTo: 'end' } : undefined),
    },
    wrapToolCall: async (request, handler) => {
      const call = request.toolCall;
      const name = call.name;
      const args = call.args ?? {};
      const callId = call.id;
      const ctx = { ...options, session: String(sessionOf(request.runtime)), run, agent };
      const decision = await before(ctx, name, args, callId);
      if (refuses(decision)) {
        return new lc.ToolMessage({ content: decision.message, tool_call_id: callId ?? '', name, status: 'error' });
      }
      let response;
      try {
        response = await handler(request);
      } catch (error) {
        await after(ctx, name, args, callId, { error });
        throw error;
      }
      if (!lc.ToolMessage.isInstance(response)) {
        // A Command (a state update) has no tool result to compare: nothing is recorded.
        return response;
      }
      const outcome = await after(
        ctx,
        name,
        args,
        callId,
        response.status === 'error' ? { error: response.content } : { result: contentResult(response.content) },
      );
      if (endsRun(outcome)) return withWarning(lc, response, outcome.message, 'error');
      if (notices(decision)) return withWarning(lc, response, decision.message);
      return response;
    },
  });
}

module.exports = { build };
