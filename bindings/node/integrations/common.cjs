'use strict';
// What every integration shares: the before/after-call checks with the integrations' failure
// policy, and the runs a post-compaction abort has stopped.
//
// Failure policy (as the Python integrations and the Claude Code hook): when the guard's store
// cannot be reached (StoreError) the call goes on unchecked and a warning is logged. A result the
// events format cannot carry as it is (an `undefined` inside it, a sparse array) is recorded as
// the model receives it (its JSON), with a logged note; one that cannot be JSON either is not
// recorded, with a warning. Nothing is skipped silently.
const { StoreError } = require('../lib/errors.cjs');

const stopped = new WeakMap(); // guard -> Set of "session\u0000run"

function key(session, run) {
  return `${session}\u0000${run ?? ''}`;
}

/** True when an abort decision has stopped this session's run. */
function isStopped(guard, session, run) {
  return stopped.get(guard)?.has(key(session, run)) ?? false;
}

function markStopped(guard, session, run) {
  let set = stopped.get(guard);
  if (!set) stopped.set(guard, (set = new Set()));
  set.add(key(session, run));
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
      logger.warn(`loopguard: ${tool}: ${e.message}; checking the arguments as the model sent them (JSON)`);
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
      logger.warn(`loopguard: ${tool}: ${e.message}; recorded the outcome as the model receives it (JSON)`);
    } catch (e2) {
      logger.warn(`loopguard: outcome of ${tool} not recorded: ${e2.message}`);
      return null;
    }
  }
  if (decision?.action === 'abort') markStopped(guard, session, run);
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

module.exports = { before, after, isStopped, markStopped, withWarning, modelView, checkContext };
