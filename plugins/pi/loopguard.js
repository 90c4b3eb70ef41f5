// loopguard for pi (the pi coding agent): an extension guarding every tool call with OpenClaw's
// loop detection, in process (the `loopguard` npm package).
//
//   tool_call        { block: true, reason } for a blocked call (pi does not run it)
//   tool_result      records the outcome (content/details, or the error); an emitted warning
//                    (effect 'notice') is added to the content the model sees; an abort (effect
//                    'end_run') too, and the session's later calls are refused, also after pi
//                    restarts when the store is persistent
//   session_compact  arms the post-compaction guard of the session
//
// Config: LOOPGUARD_CONFIG (a path to an OpenClaw config) and LOOPGUARD_STORE (memory, or
// sqlite:PATH). Install: copy into ~/.pi/agent/extensions/ or .pi/extensions/ (or `pi -e`), with
// `loopguard` installed where it resolves.
//
// A stopped session and the warning waiting for a call's result are kept through
// `loopguard/common`: the stop with the session in the guard's store (LOOPGUARD_STORE).
import { Guard, StoreError } from 'loopguard';
import { isStopped, markStopped, keepNotice, takeNotice, refuses, endsRun } from 'loopguard/common';

const STOPPED = 'loopguard stopped this session: a tool-call loop survived a context compaction.';

function sessionOf(ctx) {
  const m = ctx?.sessionManager;
  return String(m?.getSessionId?.() ?? m?.getSessionFile?.() ?? 'default');
}

/** The extension, with a guard of its own or the one given (tests, embedders). */
export function createLoopGuardExtension(options = {}) {
  return function loopguardExtension(pi) {
    const logger = options.logger ?? console;
    const guard =
      options.guard ??
      new Guard({ config: process.env.LOOPGUARD_CONFIG || null, store: process.env.LOOPGUARD_STORE || 'memory', logger });
    const safely = (what, f) => {
      try {
        return f();
      } catch (e) {
        if (e instanceof StoreError || e instanceof TypeError) {
          logger.warn(`loopguard: ${what} skipped (${e.message}); failing open`);
          return null;
        }
        throw e;
      }
    };

    pi.on('tool_call', async (event, ctx) => {
      const session = sessionOf(ctx);
      if (isStopped(guard, session, undefined, logger)) return { block: true, reason: STOPPED };
      const d = safely(`the check of ${event.toolName}`, () =>
        guard.beforeCall(session, event.toolName, event.input ?? {}, { callId: event.toolCallId }),
      );
      if (refuses(d)) return { block: true, reason: d.message };
      keepNotice(guard, event.toolCallId ?? `${session}:${event.toolName}`, d);
      return undefined;
    });

    pi.on('tool_result', async (event, ctx) => {
      const session = sessionOf(ctx);
      const result = { content: event.content ?? [], details: event.details ?? {} };
      const text = (event.content ?? []).filter((b) => b?.type === 'text').map((b) => b.text).join('\n');
      const outcome = event.isError ? { error: text } : { result };
      const o = safely(`recording the outcome of ${event.toolName}`, () =>
        guard.afterCall(session, event.toolName, event.input ?? {}, { ...outcome, callId: event.toolCallId }),
      );
      const key = event.toolCallId ?? `${session}:${event.toolName}`;
      const warning = takeNotice(guard, key);
      let shown = null;
      if (endsRun(o)) {
        markStopped(guard, session, undefined, o.message, logger);
        shown = o.message;
      } else if (warning) {
        shown = warning;
      }
      if (shown === null) return undefined;
      return { content: [...(event.content ?? []), { type: 'text', text: shown }] };
    });

    pi.on('session_compact', async (_event, ctx) => {
      safely('arming the post-compaction guard', () => guard.onCompaction(sessionOf(ctx)));
    });
  };
}

export default createLoopGuardExtension();
