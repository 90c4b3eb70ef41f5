'use strict';
// What every integration shares: the before/after-call checks with the integrations' failure
// policy, and the runs a post-compaction abort has stopped.
//
// Failure policy (as the Python integrations and the Claude Code hook): when the guard's store
// cannot be reached (StoreError) the call goes on unchecked and a warning is logged. A result the
// events format cannot carry as it is (an `undefined` inside it, a sparse array) is recorded as
// the model receives it (its JSON), with a logged note; one that cannot be JSON either is not
// recorded, with a warning. Nothing is skipped silently.
const { StoreError, verdictOf } = require('../lib/errors.cjs');

// A stopped run is kept in the guard (`guard.stopRun`, the session's aborted run in its store), so
// that a host restarted on a persistent store (sqlite:PATH) still refuses the run's calls; and,
// for a guard that keeps none (a remote guard), here, for this process.
const stopped = new WeakMap(); // guard -> Set of "session\u0000run"
// The verdicts of the runs stopped here (what `runVerdict` gives back).
const verdicts = new WeakMap(); // guard -> Map of "session\u0000run" -> verdict
// The notices (emitted warnings) a before-call decision gave, until the call's outcome shows them.
const notes = new WeakMap(); // guard -> Map of key -> message

function key(session, run) {
  return `${session}\u0000${run ?? ''}`;
}

/** Runs `f` on the guard's store; a store that cannot be reached gives `fallback`, with a warning. */
function onStore(what, logger, fallback, f) {
  try {
    return f();
  } catch (e) {
    if (e instanceof StoreError) {
      (logger ?? console).warn(`loopguard: ${what} skipped, the store is unavailable (${e.message}); failing open`);
      return fallback;
    }
    throw e;
  }
}

/** True when a decision whose effect ends the run has stopped this session's run. */
function isStopped(guard, session, run, logger) {
  if (stopped.get(guard)?.has(key(session, run))) return true;
  if (typeof guard.stoppedRun !== 'function') return false;
  return onStore('checking for a stopped run', logger, false, () => guard.stoppedRun(session, { run }) !== null);
}

/**
 * Marks the session's run stopped, in the guard's store when it has one (`message`: why;
 * `verdict`: the loop's summary, given back by `runVerdict`).
 */
function markStopped(guard, session, run, message = 'loopguard stopped this run', logger, verdict) {
  let set = stopped.get(guard);
  if (!set) stopped.set(guard, (set = new Set()));
  set.add(key(session, run));
  let map = verdicts.get(guard);
  if (!map) verdicts.set(guard, (map = new Map()));
  map.set(key(session, run), verdict ?? verdictOf({ session, run: run ?? null, message }));
  if (typeof guard.stopRun === 'function') {
    onStore('recording the stopped run', logger, undefined, () => guard.stopRun(session, { run, message }));
  }
}

/** The verdict of a run stopped in this process, or null. */
function runVerdict(guard, session, run) {
  return verdicts.get(guard)?.get(key(session, run)) ?? null;
}

/** Keeps the message of a decision whose effect is 'notice' until `takeNotice(guard, id)`. */
function keepNotice(guard, id, decision) {
  if (!notices(decision)) return;
  let map = notes.get(guard);
  if (!map) notes.set(guard, (map = new Map()));
  map.set(id, decision.message);
}

/** The notice kept for `id` (forgotten once taken), or undefined. */
function takeNotice(guard, id) {
  const map = notes.get(guard);
  const message = map?.get(id);
  map?.delete(id);
  return message;
}

// What a decision means is its `effect`, computed by the engine (loopguard_events::Effect):
// 'proceed', 'notice' (show the model the warning), 'refuse' (the call must not run), 'ask'
// (`loopguard.onCritical: "ask"`: the user decides; the integrations have no approval flow yet,
// so the call is refused) or 'end_run' (the run is over: the call must not run, or, after an
// outcome, the run stops there).

/** True when the call must not run (effect 'refuse', 'ask' or 'end_run'). */
function refuses(decision) {
  return (
    decision?.effect === 'refuse' || decision?.effect === 'ask' || decision?.effect === 'end_run'
  );
}

/** True when the decision ends the run (effect 'end_run'). */
function endsRun(decision) {
  return decision?.effect === 'end_run';
}

/** True when the model should be shown the decision's message alongside the result (effect 'notice'). */
function notices(decision) {
  return decision?.effect === 'notice';
}

let addon;

/**
 * What the `openclaw` release 2026.9.6 shows the model for a call's decision taken under the
 * `openclaw-2026.9.6` profile: the tool result given instead of a vetoed call (a `block`, or an
 * `abort` that ends the run), or the note appended to the tool result after an emitted warning;
 * undefined for any other decision. The texts are the engine's (loopguard_core::openclaw_2026_9_6).
 */
function openclawShown(decision) {
  if (!decision || typeof decision !== 'object' || typeof decision.action !== 'string') return undefined;
  addon ??= require('../lib/native.cjs');
  const shown = addon.openclaw20260906Shown(
    String(decision.type ?? ''),
    decision.action,
    String(decision.message ?? ''),
    Number(decision.count ?? 0),
    decision.emitted === true,
  );
  return shown ?? undefined;
}

/**
 * The profile of the OpenClaw release `version` (`2026.9.6`, `2026.10.1-beta.2`):
 * `openclaw-2026.9.6` for that release and later ones, `openclaw` for older ones, null when
 * `version` is not a release version (loopguard_core::DetectorProfile::for_openclaw_release).
 */
function openclawProfileFor(version) {
  if (typeof version !== 'string') return null;
  addon ??= require('../lib/native.cjs');
  return addon.openclawProfileForRelease(version) ?? null;
}

/** The value as the model receives it: its JSON (undefined properties left out). */
function modelView(value) {
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  return text === undefined ? null : JSON.parse(text);
}

function checkContext(ctx, who) {
  if (!ctx || typeof ctx !== 'object' || !ctx.guard || typeof ctx.guard.beforeCall !== 'function') {
    throw new TypeError(`${who}: options.guard must be a loopguard Guard (new Guard(...) or Guard.remote(...))`);
  }
  if (ctx.session !== undefined && typeof ctx.session !== 'string') {
    throw new TypeError(`${who}: options.session must be a string`);
  }
}

// What was said about values the events format cannot carry, per logger: the same result
// (a tool that returns `{ x: undefined }` on every call) is said once, not on every call.
const said = new WeakMap();
const SAID_MAX = 1000;
function sayOnce(logger, text) {
  const key = typeof logger === 'object' && logger !== null ? logger : console;
  let seen = said.get(key);
  if (seen === undefined) said.set(key, (seen = new Set()));
  if (seen.has(text)) return;
  if (seen.size >= SAID_MAX) seen.clear();
  seen.add(text);
  logger.warn(`${text} (said once)`);
}

/** The before-call decision, or null when the store is unreachable (failing open). */
async function before(ctx, tool, args, callId) {
  const { guard, session = 'default', run, agent } = ctx;
  const logger = ctx.logger ?? console;
  try {
    return await guard.beforeCall(session, tool, args, { run, callId, agent });
  } catch (e) {
    if (e instanceof StoreError) {
      logger.warn(`loopguard: check of ${tool} skipped, the store is unavailable (${e.message}); failing open`);
      return null;
    }
    if (e instanceof TypeError) {
      sayOnce(logger, `loopguard: ${tool}: ${e.message}; checking the arguments as the model sent them (JSON)`);
      return guard.beforeCall(session, tool, modelView(args), { run, callId, agent });
    }
    throw e;
  }
}

/** The after-call decision (null when not recorded); marks the run stopped on an abort. */
async function after(ctx, tool, args, callId, outcome) {
  const { guard, session = 'default', run, agent } = ctx;
  const logger = ctx.logger ?? console;
  const ids = { run, callId, agent };
  let decision = null;
  try {
    decision = await guard.afterCall(session, tool, args, { ...outcome, ...ids });
  } catch (e) {
    if (e instanceof StoreError) {
      logger.warn(`loopguard: outcome of ${tool} not recorded, the store is unavailable (${e.message}); failing open`);
      return null;
    }
    if (!(e instanceof TypeError || e instanceof RangeError)) throw e;
    let viewed;
    try {
      viewed = 'error' in outcome && outcome.error !== undefined
        ? { error: outcome.error instanceof Error ? outcome.error : modelView(outcome.error) }
        : { result: modelView(outcome.result) };
      decision = await guard.afterCall(session, tool, modelView(args), { ...viewed, ...ids });
      sayOnce(logger, `loopguard: ${tool}: ${e.message}; recorded the outcome as the model receives it (JSON)`);
    } catch (e2) {
      logger.warn(`loopguard: outcome of ${tool} not recorded: ${e2.message}`);
      return null;
    }
  }
  if (endsRun(decision)) markStopped(guard, session, run, decision.message, logger, verdictOf(decision));
  return decision;
}

/**
 * `result` with a warning the model should see: a string gets it appended on a line of its
 * own; an object gets a `loopguard` field; anything else is wrapped as `{ result, loopguard }`.
 */
function withWarning(result, message) {
  if (typeof result === 'string') return `${result}\n\n${message}`;
  if (result !== null && typeof result === 'object' && !Array.isArray(result)) {
    return { ...result, loopguard: message };
  }
  return { result, loopguard: message };
}

module.exports = {
  before,
  after,
  isStopped,
  markStopped,
  runVerdict,
  keepNotice,
  takeNotice,
  refuses,
  endsRun,
  notices,
  withWarning,
  openclawShown,
  openclawProfileFor,
  modelView,
  checkContext,
};
