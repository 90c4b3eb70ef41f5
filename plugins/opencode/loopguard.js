// loopguard for opencode: a plugin (https://opencode.ai/docs/plugins) guarding every tool call of
// every session with OpenClaw's loop detection, in process (the `loopguard` npm package).
//
//   tool.execute.before  throws the block message: the tool does not run, the model gets the error
//   tool.execute.after   records the output; an emitted warning (effect 'notice') is appended to
//                        what the model sees; an abort (effect 'end_run': a loop surviving a
//                        compaction) is appended too, and every later call of the session is
//                        refused, also after opencode restarts when the store is persistent
//   event                session.compacted arms the post-compaction guard of the session
//
// Config: LOOPGUARD_CONFIG (a path to an OpenClaw config, JSON5 or JSON) and LOOPGUARD_STORE
// (memory by default, or sqlite:PATH); without a config, detection is enabled with OpenClaw's
// defaults. Install: copy this file into .opencode/plugin/ (or ~/.config/opencode/plugin/) and
// `npm install` loopguard where opencode resolves it.
//
// A stopped session and the warning waiting for a call's output are kept through
// `loopguard/common`: the stop with the session in the guard's store (LOOPGUARD_STORE).
import { Guard, StoreError } from 'loopguard';
import { isStopped, markStopped, keepNotice, takeNotice, refuses, endsRun } from 'loopguard/common';

const STOPPED = 'loopguard stopped this session: a tool-call loop survived a context compaction.';

/** The plugin, with a guard of its own or the one given (tests, embedders). */
export function createLoopGuardPlugin(options = {}) {
  return async () => {
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
    return {
      'tool.execute.before': async (input, output) => {
        if (isStopped(guard, input.sessionID, undefined, logger)) throw new Error(STOPPED);
        const d = safely(`the check of ${input.tool}`, () =>
          guard.beforeCall(input.sessionID, input.tool, output.args ?? {}, { callId: input.callID }),
        );
        if (refuses(d)) throw new Error(d.message);
        keepNotice(guard, input.callID, d);
      },
      'tool.execute.after': async (input, output) => {
        const result = { content: [{ type: 'text', text: String(output.output ?? '') }] };
        const o = safely(`recording the outcome of ${input.tool}`, () =>
          guard.afterCall(input.sessionID, input.tool, input.args ?? {}, { result, callId: input.callID }),
        );
        const warning = takeNotice(guard, input.callID);
        if (endsRun(o)) {
          markStopped(guard, input.sessionID, undefined, o.message, logger);
          output.output = `${output.output ?? ''}\n\n${o.message}`;
        } else if (warning) {
          output.output = `${output.output ?? ''}\n\n${warning}`;
        }
      },
      event: async ({ event }) => {
        if (event?.type === 'session.compacted' && event.properties?.sessionID) {
          safely('arming the post-compaction guard', () => guard.onCompaction(event.properties.sessionID));
        }
      },
    };
  };
}

/** The plugin opencode loads. */
export const LoopGuardPlugin = createLoopGuardPlugin();
