// The OpenClaw plugin of loopguard: OpenClaw's tool-call loop detection with every
// `tools.loopDetection` setting (which OpenClaw itself retired in #111382), per agent, plus
// loopguard's strict profile, answered in process by the loopguard engine.
//
//   before_tool_call  -> { block: true, blockReason } when the call is blocked (or its run aborted)
//   after_tool_call   -> the outcome (result or error) is recorded; an abort (effect 'end_run')
//                        stops the run's later calls, kept in the guard's store (`store`); a
//                        warning (effect 'notice') is logged (OpenClaw's after-hook cannot change
//                        the result the model sees)
//   after_compaction  -> arms the post-compaction guard of the session and run
//
// The plugin's config (plugins.entries.loopguard.config) is an OpenClaw config fragment:
// { tools: { loopDetection: {...} }, loopguard: { profile: "strict" }, agents: { list: [...] },
// store: "sqlite:/path" }. Without one, detection is enabled with OpenClaw's defaults.
// Nothing is imported from OpenClaw: the entry is the plain object definePluginEntry takes.
import { createRequire } from 'node:module';

const { Guard, StoreError, isStopped, markStopped, refuses, endsRun, notices } = loadLoopguard();

/**
 * The `loopguard` package, or an error saying it is missing: a static import would fail with
 * "does not provide an export named 'Guard'" when another package of that name is installed (the
 * npm registry has one), or with a bare "Cannot find package" when none is.
 */
function loadLoopguard() {
  // Synchronous (OpenClaw require()s plugins: no top-level await); the package's CommonJS
  // entries are the ones its ES modules re-export.
  const require = createRequire(import.meta.url);
  try {
    const [main, common] = [require('loopguard'), require('loopguard/common')];
    if (typeof main.Guard === 'function' && typeof common.refuses === 'function') return { ...main, ...common };
  } catch (e) {
    if (!['MODULE_NOT_FOUND', 'ERR_PACKAGE_PATH_NOT_EXPORTED'].includes(e?.code)) throw e;
  }
  throw new Error(
    "loopguard OpenClaw plugin: the `loopguard` npm package (loopguard's engine) is missing from the plugin's folder, " +
      'or another package of that name is installed there; install it into the plugin folder before `openclaw plugins install` ' +
      '(npm install --no-save target/npm/loopguard-0.1.0.tgz, built by scripts/build-node.sh; see docs/typescript/openclaw.md)',
  );
}

const STOPPED = 'loopguard stopped this run: a tool-call loop survived a context compaction.';

/** The guard for a plugin config (exported for tests and for hosts that build their own). */
export function guardFor(pluginConfig, logger = console) {
  const { store = 'memory', ...config } = pluginConfig ?? {};
  const hasConfig = Object.keys(config).length > 0;
  return new Guard({ config: hasConfig ? config : null, store, logger });
}

/**
 * A tool result with its undefined-valued object keys left out. OpenClaw's own tools return
 * such keys (exec's `terminate: undefined`); OpenClaw's serialiser would write a bare
 * `undefined` token there, which no event can carry, so the plugin records the result as
 * JSON.stringify sees it. Every outcome is recorded the same way, so identical results still
 * compare equal. Only plain objects and arrays are copied; other values are left as they are.
 */
export function withoutUndefined(value, depth = 0) {
  if (value === null || typeof value !== 'object' || depth > 64) return value;
  if (Array.isArray(value)) return value.map((v) => withoutUndefined(v, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    if (v !== undefined) out[k] = withoutUndefined(v, depth + 1);
  }
  return out;
}

function scope(event, ctx) {
  return {
    session: String(ctx?.sessionKey ?? ctx?.sessionId ?? event?.sessionKey ?? 'default'),
    run: event?.runId ?? ctx?.runId ?? undefined,
    callId: event?.toolCallId ?? ctx?.toolCallId ?? undefined,
    agent: ctx?.agentId ?? undefined,
  };
}

/** Registers the hooks on OpenClaw's plugin API (`api.on`). */
export function register(api) {
  const logger = api.logger ?? console;
  const guard = guardFor(api.pluginConfig, logger);
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

  api.on('before_tool_call', (event, ctx) => {
    const s = scope(event, ctx);
    if (isStopped(guard, s.session, s.run, logger)) return { block: true, blockReason: STOPPED };
    const d = safely(`the check of ${event.toolName}`, () =>
      guard.beforeCall(s.session, event.toolName, event.params ?? {}, { run: s.run, callId: s.callId, agent: s.agent }),
    );
    if (refuses(d)) return { block: true, blockReason: d.message };
    if (notices(d)) logger.warn(`loopguard: ${d.message}`);
    return undefined;
  });

  api.on('after_tool_call', (event, ctx) => {
    const s = scope(event, ctx);
    const outcome =
      event.error !== undefined && event.error !== null ? { error: event.error } : { result: withoutUndefined(event.result) };
    const o = safely(`recording the outcome of ${event.toolName}`, () =>
      guard.afterCall(s.session, event.toolName, event.params ?? {}, { ...outcome, run: s.run, callId: s.callId, agent: s.agent }),
    );
    if (endsRun(o)) {
      markStopped(guard, s.session, s.run, o.message, logger);
      logger.warn(`loopguard: ${o.message}`);
    }
  });

  api.on('after_compaction', (event, ctx) => {
    const s = scope(event, ctx);
    safely('arming the post-compaction guard', () => guard.onCompaction(s.session, { run: s.run, agent: s.agent }));
  });

  return guard;
}

export default {
  id: 'loopguard',
  name: 'loopguard',
  description: "Tool-call loop detection with OpenClaw's full tools.loopDetection settings, per agent, and the strict profile.",
  register,
};
