'use strict';

/** A decision record (`decision`, `detector`, ...) as the API's object: `action` first. */
function toDecision(record) {
  const { decision, ...rest } = record;
  return { action: decision, ...rest };
}

module.exports = { toDecision };
