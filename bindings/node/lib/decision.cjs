'use strict';
const { LoopguardError } = require('./errors.cjs');

let addon;

/**
 * A decision record (`decision`, `detector`, ...) as the API's object: `action` first, then its
 * `effect`, computed by the engine from the record's `decision` and `emitted`
 * (loopguard_events::Effect::of_record; a record does not say the server's mode, so its
 * decision is taken as enforced). A decision word the engine does not know is an error.
 */
function toDecision(record) {
  const { decision, ...rest } = record;
  addon ??= require('./native.cjs');
  const effect = addon.effectOfRecord(String(decision), typeof rest.emitted === 'boolean' ? rest.emitted : null);
  if (effect === null) throw new LoopguardError(`decision record: unknown decision ${JSON.stringify(decision)}`);
  return { action: decision, effect, ...rest };
}

module.exports = { toDecision };
