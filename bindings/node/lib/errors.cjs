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

module.exports = { LoopguardError, EventError, ConfigError, StoreError, native };
