'use strict';

/** Base class of loopguard's own errors. */
class LoopguardError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = this.constructor.name;
  }
}
/** An event loopguard cannot apply; `field` names the field (like a bad line for `loopguard replay`). */
class EventError extends LoopguardError {
  constructor(message, field = null, options) {
    super(message, options);
    this.field = field;
  }
}
/** An OpenClaw config that OpenClaw would reject (unknown keys, wrong types) or that is not JSON5. */
class ConfigError extends LoopguardError {}
/** The guard's session store cannot be reached. */
class StoreError extends LoopguardError {}

/**
 * The summary of the loop that ended a run, from the decision that ended it (effect 'end_run':
 * `loopguard.onCritical: "end-run"`, the next critical loop after an "ask", the strict profile's
 * `second_critical_abort`, a loop that survived a context compaction, a later call of a run so
 * ended). A plain object, JSON-ready.
 */
function verdictOf(decision) {
  const d = decision ?? {};
  return {
    session: d.session ?? 'default',
    run: d.run ?? null,
    tool: d.tool ?? null,
    detector: d.detector ?? null,
    count: d.count ?? null,
    message: d.message || 'loopguard ended the run',
    effect: d.effect ?? 'end_run',
    action: d.action ?? null,
    level: d.level ?? null,
    callId: d.callId ?? null,
  };
}

/** loopguard ended the agent's run; `verdict` says which loop and why (its message is the error's). */
class RunEndedError extends LoopguardError {
  constructor(verdict, options) {
    super(verdict?.message || 'loopguard ended the run', options);
    this.verdict = verdict;
  }

  /** The error of a decision that ended the run. */
  static of(decision) {
    return new RunEndedError(verdictOf(decision));
  }
}

/** Runs a native call, turning its coded errors into the classes above. */
function native(call) {
  try {
    return call();
  } catch (e) {
    const code = typeof e?.code === 'string' ? e.code : '';
    if (code.startsWith('LOOPGUARD_EVENT:')) {
      throw new EventError(e.message, code.slice('LOOPGUARD_EVENT:'.length) || null);
    }
    if (code === 'LOOPGUARD_CONFIG') throw new ConfigError(e.message);
    if (code === 'LOOPGUARD_STORE') throw new StoreError(e.message);
    if (code === 'LOOPGUARD_ARG') throw new TypeError(e.message);
    if (code === 'LOOPGUARD_CLOSED') throw new LoopguardError(e.message);
    throw e;
  }
}

module.exports = { LoopguardError, EventError, ConfigError, StoreError, RunEndedError, verdictOf, native };
