// The OpenClaw plugin of loopguard: OpenClaw's tool-call loop detection answered in process by
// the loopguard engine, in the era of the OpenClaw it is loaded into by default (the
// `openclaw-2026.9.6` profile, the shipped release's detector byte for byte, on OpenClaw
// 2026.9.6 and later; the documented `tools.loopDetection`, every setting per agent, on older
// hosts), or the profile the config names (`loopguard.profile`: openclaw, strict,
// openclaw-2026.9.6).
//
//   before_tool_call  -> { block: true, blockReason } when the call is blocked (or its run ended);
//                        under the 2026.9.6 profile the reason is the text that release shows,
//                        and a critical after the run's first ends the run: every later call
//                        of the run is refused (a plugin cannot end OpenClaw's run loop itself:
//                        the `terminate` flag that would is not offered for a blocked call)
//   after_tool_call   -> the outcome (result or error) is recorded; an abort (effect 'end_run')
//                        stops the run's later calls, kept in the guard's store (`store`)
//   tool-result middleware (api.registerAgentToolResultMiddleware, OpenClaw 2026.9.6+)
//                     -> under the 2026.9.6 profile an emitted warning's note is appended to
//                        the tool result the model sees, as that release does
//   after_compaction  -> arms the post-compaction guard of the session and run
//
// Warnings are also logged. The plugin's config (plugins.entries.loopguard.config) is an
// OpenClaw config fragment: { tools: { loopDetection: {...} }, loopguard: { profile: "strict" },
// agents: { list: [...] }, store: "sqlite:/path" }. Without one, detection is enabled.
// Nothing is imported from OpenClaw: the entry is the plain object definePluginEntry takes.
import { createRequire } from 'node:module';

const {
  Guard,
  StoreError,
  isStopped,
  markStopped,
  refuses,
  endsRun,
  notices,
  openclawShown,
  openclawProfileFor,
} = loadLoopguard();

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
    if (typeof main.Guard === 'function' && typeof common.refuses === 'function' && typeof common.openclawShown === 'function') return { ...main, ...common };
  } catch (e) {
    if (!['MODULE_NOT_FOUND', 'ERR_PACKAGE_PATH_NOT_EXPORTED'].includes(e?.code)) throw e;
  }
  throw new Error(
    "loopguard OpenClaw plugin: the `loopguard` npm package (loopguard's engine) is missing from the plugin's folder, " +
      'or another package of that name is installed there; install it into the plugin folder before `openclaw plugins install` ' +
      '(npm install --no-save target/npm/loopguard-0.1.0.tgz, built by scripts/build-node.sh; see docs/typescript/openclaw.md)',
  );
}

// Every later call of a stopped run (a loop that survived a compaction, or a critical after the
// run's one chance to recover) is refused with this.
const STOPPED = 'loopguard stopped this run: a tool-call loop went on after the run was told to stop. No more tool calls run in it.';

/** The profile of OpenClaw's own release 2026.9.6, its detector and tool wrapper byte for byte. */
export const SHIPPED_PROFILE = 'openclaw-2026.9.6';
/**
 * The profile of the OpenClaw release `version` (OpenClaw's calendar versions, `2026.9.6`,
 * `2026.10.1-beta.2`): `openclaw-2026.9.6` for that release and later ones (no later era is
 * known), `openclaw` (the documented `tools.loopDetection`) for older ones, and null for a
 * version that is not one. The engine decides (`openclawProfileFor`), as replay does for the
 * release a session records.
 */
export function profileForHost(version) {
  return openclawProfileFor(typeof version === 'string' ? version : undefined);
}

/**
 * The guard config for a plugin config on the host `hostVersion`: the config's own profile
 * (`loopguard.profile`) when it names one, else the host's era (`profileForHost`; the
 * documented profile when the version is unknown). Detection is on unless the config says
 * `tools.loopDetection.enabled: false` (the plugin is there to detect; OpenClaw's own default
 * is off). Returns `{ config, store, profile, why }`.
 */
export function configFor(pluginConfig, hostVersion) {
  const { store = 'memory', ...given } = pluginConfig ?? {};
  const named = given.loopguard?.profile;
  const era = profileForHost(hostVersion);
  const profile = named !== undefined ? String(named) : (era ?? 'openclaw');
  const why =
    named !== undefined
      ? 'loopguard.profile in the plugin config'
      : era
        ? `the era of OpenClaw ${hostVersion}`
        : `OpenClaw's version is unknown (${JSON.stringify(hostVersion ?? null)}): the documented profile`;
  const tools = given.tools ?? {};
  const config = { ...given, tools: { ...tools, loopDetection: { enabled: true, ...(tools.loopDetection ?? {}) } } };
  if (named === undefined && profile === SHIPPED_PROFILE) config.loopguard = { ...(given.loopguard ?? {}), profile };
  return { config, store, profile, why };
}

/** The guard for a plugin config (exported for tests and for hosts that build their own). */
export function guardFor(pluginConfig, logger = console, hostVersion = undefined) {
  const { config, store } = configFor(pluginConfig, hostVersion);
  return new Guard({ config, store, logger });
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

// Sub-agents (`sessions_spawn`) run in a session of their own; OpenClaw's `subagent_spawned`
// hook names the child's session and the one that spawned it. child session -> parent session,
// bounded (the oldest link is dropped first).
const MAX_SUBAGENTS = 4096;

function scope(event, ctx, parents) {
  const session = String(ctx?.sessionKey ?? ctx?.sessionId ?? event?.sessionKey ?? 'default');
  return {
    session,
    run: event?.runId ?? ctx?.runId ?? undefined,
    callId: event?.toolCallId ?? ctx?.toolCallId ?? undefined,
    agent: ctx?.agentId ?? undefined,
    parentSession: parents?.get(session),
  };
}

/** The result with `note` appended as a text block (agent-core's `appendToolLoopWarning`). */
function withNote(result, note) {
  const content = Array.isArray(result?.content) ? result.content : [];
  return { ...result, content: [...content, { type: 'text', text: note }] };
}

/**
 * The result without the note the plugin appended to it, so that the outcome recorded is the
 * tool's own (the release records outcomes before it appends its note: the note must not change
 * the no-progress hashes).
 */
export function withoutNote(result, note) {
  const content = result?.content;
  if (note === undefined || !Array.isArray(content) || content.length === 0) return result;
  const last = content[content.length - 1];
  if (last?.type !== 'text' || last.text !== note) return result;
  return { ...result, content: content.slice(0, -1) };
}

// Notes of emitted warnings waiting for their call's result, per guard: toolCallId -> note.
// Bounded: a call whose result never comes leaves its note behind.
const MAX_PENDING_NOTES = 1024;

// OpenClaw registers a plugin more than once in a process (a discovery pass, then the full
// one) and may call the hooks of one registration and the tool-result middleware of another
// (seen in 2026.9.6): every registration with the same config shares one guard and one set of
// pending notes, kept on globalThis since OpenClaw may load the module more than once too.
const SHARED = Symbol.for('loopguard.openclaw-plugin');

function shared(picked, logger) {
  globalThis[SHARED] ??= new Map();
  const all = globalThis[SHARED];
  const key = JSON.stringify([picked.config, picked.store]);
  let state = all.get(key);
  if (!state) {
    state = {
      guard: new Guard({ config: picked.config, store: picked.store, logger }),
      notes: new Map(),
      parents: new Map(),
    };
    all.set(key, state);
  }
  return state;
}

/** Registers the hooks on OpenClaw's plugin API (`api.on`). */
export function register(api) {
  const logger = api.logger ?? console;
  let hostVersion;
  try {
    hostVersion = api.runtime?.version;
  } catch {
    hostVersion = undefined;
  }
  const picked = configFor(api.pluginConfig, hostVersion);
  const { guard, notes, parents } = shared(picked, logger);
  const shipped = picked.profile === SHIPPED_PROFILE;
  logger.info?.(`loopguard: profile ${picked.profile} (${picked.why})`);
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
  const shown = (d) => (shipped ? openclawShown(d) : undefined) ?? d.message;

  // A sub-agent's calls are decided in its own session (its own loop state), linked to the
  // session that spawned it: that session's callsPerSession budget counts them.
  api.on('subagent_spawned', (event, ctx) => {
    const child = event?.childSessionKey ?? ctx?.childSessionKey;
    const parent = ctx?.requesterSessionKey ?? event?.requesterSessionKey;
    if (typeof child !== 'string' || typeof parent !== 'string' || child === parent) return;
    if (parents.size >= MAX_SUBAGENTS) parents.delete(parents.keys().next().value);
    parents.set(child, parent);
  });

  api.on('before_tool_call', (event, ctx) => {
    const s = scope(event, ctx, parents);
    if (isStopped(guard, s.session, s.run, logger)) return { block: true, blockReason: STOPPED };
    const d = safely(`the check of ${event.toolName}`, () =>
      guard.beforeCall(s.session, event.toolName, event.params ?? {}, {
        run: s.run,
        callId: s.callId,
        agent: s.agent,
        parentSession: s.parentSession,
      }),
    );
    if (refuses(d)) {
      const reason = shown(d);
      if (endsRun(d)) markStopped(guard, s.session, s.run, reason, logger);
      return { block: true, blockReason: reason };
    }
    if (notices(d)) {
      logger.warn(`loopguard: ${d.message}`);
      const note = shipped ? openclawShown(d) : undefined;
      if (note !== undefined && s.callId !== undefined) {
        if (notes.size >= MAX_PENDING_NOTES) notes.delete(notes.keys().next().value);
        notes.set(String(s.callId), note);
      }
    }
    return undefined;
  });

  api.on('after_tool_call', (event, ctx) => {
    const s = scope(event, ctx, parents);
    const note = s.callId === undefined ? undefined : notes.get(String(s.callId));
    if (note !== undefined) notes.delete(String(s.callId));
    const outcome =
      event.error !== undefined && event.error !== null
        ? { error: event.error }
        : { result: withoutUndefined(withoutNote(event.result, note)) };
    const o = safely(`recording the outcome of ${event.toolName}`, () =>
      guard.afterCall(s.session, event.toolName, event.params ?? {}, {
        ...outcome,
        run: s.run,
        callId: s.callId,
        agent: s.agent,
        parentSession: s.parentSession,
      }),
    );
    if (endsRun(o)) {
      markStopped(guard, s.session, s.run, o.message, logger);
      logger.warn(`loopguard: ${o.message}`);
    }
  });

  // The hook OpenClaw 2026.9.6 offers for changing the tool result the model sees. The manifest
  // declares it (contracts.agentToolResultMiddleware); OpenClaw lets only an explicitly enabled
  // plugin register it, and hosts without it have the warnings in the log only. It sees the
  // results of calls that ran (not of calls a hook blocked), before after_tool_call.
  if (typeof api.registerAgentToolResultMiddleware === 'function') {
    api.registerAgentToolResultMiddleware(
      (event) => {
        const note = notes.get(String(event.toolCallId));
        return note === undefined ? undefined : { result: withNote(event.result, note) };
      },
      { runtimes: ['openclaw'] },
    );
  }

  api.on('after_compaction', (event, ctx) => {
    const s = scope(event, ctx);
    safely('arming the post-compaction guard', () => guard.onCompaction(s.session, { run: s.run, agent: s.agent }));
  });

  return guard;
}

export default {
  id: 'loopguard',
  name: 'loopguard',
  description: "Tool-call loop detection in the host OpenClaw's own era (2026.9.6's detector byte for byte), or OpenClaw's full tools.loopDetection settings per agent, or the strict profile.",
  register,
};
