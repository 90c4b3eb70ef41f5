'use strict';
// JavaScript values to events.md JSON, the way OpenClaw's own serialiser ("stableStringify")
// sees them. The JSON text is applied by the same Rust engine as every other front end, whose
// canonical serialiser then writes the same bytes OpenClaw hashes:
//
//   finite numbers       JSON.stringify (-0 is 0, 1e21 is 1e+21): the engine parses and
//                        formats them as JavaScript does;
//   NaN                  the string "NaN" (OpenClaw writes NaN as the JSON string "NaN");
//   Infinity, -Infinity  1e999, -1e999 (parsed as +-Infinity, written as "Infinity");
//   bigint               the string of its digits, as OpenClaw writes it ("123");
//   function, symbol     null;
//   a cycle              the string "[Circular]" where an object is met again while inside
//                        itself (a shared object met twice elsewhere is written twice);
//   Error                {message, name, stack};
//   Uint8Array, Buffer   {data: base64, type: "Uint8Array"};
//   Date, Map, Set, ...  their own enumerable keys (usually {}), as OpenClaw does: mind that
//                        two different Dates hash the same;
//   undefined, holes     a TypeError naming the path: OpenClaw writes the bare token
//                        `undefined` there, which no JSON text can carry.
//
// Object keys are written in their own order; the engine sorts them by UTF-16 code units.
// Lone surrogates are written as \uXXXX escapes, kept by the engine and dropped only when it
// hashes (as OpenClaw does).

/** The engine's nesting limit (loopguard_core::MAX_JSON_DEPTH) less the event's own level. */
const MAX_DEPTH = 2040;

function describePath(root, steps) {
  let p = root;
  for (const s of steps) p += typeof s === 'number' ? `[${s}]` : `[${JSON.stringify(s)}]`;
  return p;
}

// The fast path: JSON.stringify when every value is plain JSON (strings, finite numbers,
// booleans, null, arrays without holes, objects whose prototype is Object.prototype or null).
// Anything else (and a cycle, which JSON.stringify refuses) takes the exact path below.
const SLOW = new Error('loopguard: not plain JSON');
function plainOnly(key, _value) {
  const raw = this[key]; // before any toJSON
  switch (typeof raw) {
    case 'string':
    case 'boolean':
      return raw;
    case 'number':
      if (Number.isFinite(raw)) return raw;
      throw SLOW;
    case 'object': {
      if (raw === null || Array.isArray(raw)) return raw;
      const proto = Object.getPrototypeOf(raw);
      if (proto === Object.prototype || proto === null) return raw;
      throw SLOW;
    }
    default:
      throw SLOW;
  }
}

/**
 * Writes `value` as JSON text (see the table above); `root` names it in errors (`args`).
 * @param {unknown} value
 * @param {string} root
 * @returns {string}
 */
function toJson(value, root) {
  // Small plain values (most tool arguments and results) are checked by a scan and written by
  // JSON.stringify without a replacer, its fastest path; the rest by the replacer, then exactly.
  if (isPlain(value, 0)) return JSON.stringify(value);
  try {
    return JSON.stringify(value, plainOnly);
  } catch {
    return exactJson(value, root);
  }
}

// How deep (and how many values) the scan looks before leaving a value to the replacer path.
const SCAN_DEPTH = 16;
let scanBudget = 0;

/**
 * True when `v` is plain JSON as plainOnly accepts it, small enough to scan (at most SCAN_DEPTH
 * levels and 512 values): then JSON.stringify(v) writes what JSON.stringify(v, plainOnly) does.
 */
function isPlain(v, depth) {
  if (depth === 0) scanBudget = 512;
  if (--scanBudget < 0) return false;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object': {
      if (v === null) return true;
      if (depth >= SCAN_DEPTH) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          if (!(i in v) || !isPlain(v[i], depth + 1)) return false;
        }
        return true;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const k in v) {
        if (!Object.prototype.hasOwnProperty.call(v, k)) return false;
        if (!isPlain(v[k], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/** True when `value` nests objects or arrays more than `max` levels deep (without recursion). */
function deeperThan(value, max) {
  const seen = new Set();
  let level = [value];
  for (let depth = 0; level.length > 0; depth++) {
    if (depth > max) return true;
    const next = [];
    for (const v of level) {
      if (v === null || typeof v !== 'object' || seen.has(v)) continue;
      seen.add(v);
      for (const k of Object.keys(v)) next.push(v[k]);
    }
    level = next;
  }
  return false;
}

/** The exact path: every JavaScript value, with errors naming the path. */
function exactJson(value, root) {
  const stack = new Set();
  const steps = [];
  const out = [];
  const fail = (what) => {
    throw new TypeError(`${describePath(root, steps)}: ${what}`);
  };
  const write = (v) => {
    switch (typeof v) {
      case 'string':
        out.push(JSON.stringify(v));
        return;
      case 'number':
        if (Number.isFinite(v)) out.push(JSON.stringify(v));
        else if (Number.isNaN(v)) out.push('"NaN"');
        else out.push(v > 0 ? '1e999' : '-1e999');
        return;
      case 'boolean':
        out.push(v ? 'true' : 'false');
        return;
      case 'bigint':
        out.push(`"${v.toString()}"`);
        return;
      case 'function':
      case 'symbol':
        out.push('null');
        return;
      case 'undefined':
        fail(
          'undefined is not a JSON value (OpenClaw would hash the bare token `undefined`, which an event cannot carry): leave the key out or use null',
        );
        return;
      default:
        break;
    }
    if (v === null) {
      out.push('null');
      return;
    }
    if (stack.has(v)) {
      out.push('"[Circular]"');
      return;
    }
    if (steps.length >= MAX_DEPTH) {
      throw new RangeError(`${describePath(root, steps)}: nested deeper than ${MAX_DEPTH} levels`);
    }
    stack.add(v);
    try {
      if (Array.isArray(v)) {
        out.push('[');
        for (let i = 0; i < v.length; i++) {
          if (i > 0) out.push(',');
          steps.push(i);
          if (!(i in v)) {
            fail('a hole in a sparse array is not a JSON value (OpenClaw would write nothing there): fill it, e.g. with null');
          }
          write(v[i]);
          steps.pop();
        }
        out.push(']');
      } else if (v instanceof Error) {
        writeObject([
          ['message', v.message],
          ['name', v.name],
          ['stack', v.stack],
        ]);
      } else if (v instanceof Uint8Array) {
        const data = Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
        writeObject([
          ['data', data],
          ['type', 'Uint8Array'],
        ]);
      } else {
        writeObject(Object.keys(v).map((k) => [k, v[k]]));
      }
    } finally {
      stack.delete(v);
    }
  };
  const writeObject = (entries) => {
    out.push('{');
    entries.forEach(([k, item], i) => {
      if (i > 0) out.push(',');
      out.push(JSON.stringify(k), ':');
      steps.push(k);
      write(item);
      steps.pop();
    });
    out.push('}');
  };
  try {
    write(value);
  } catch (e) {
    // JavaScript's stack can end before MAX_DEPTH levels (each level takes a few frames):
    // the error names the depth, not the stack.
    if (e instanceof RangeError && !e.message.includes('nested deeper than') && deeperThan(value, MAX_DEPTH)) {
      throw new RangeError(`${root}: nested deeper than ${MAX_DEPTH} levels`);
    }
    throw e;
  }
  return out.join('');
}

/**
 * A thrown value as the `error` of an outcome: an Error is its message (its name when the
 * message is empty), as OpenClaw's formatError does; anything else is converted by toJson.
 */
function errorJson(error, root) {
  if (error instanceof Error) {
    return JSON.stringify(error.message === '' ? String(error.name) : String(error.message));
  }
  return toJson(error, root);
}

// Each id field remembers the last value written and its JSON: an agent calls the guard with
// the same few ids over and over, and comparing a string is cheaper than escaping it again.
// One closure per field (not a table keyed by the field's name, a lookup V8 cannot specialise).
function idField(name) {
  let last = '';
  let json = '""';
  return (v) => {
    if (v === last) return json;
    if (typeof v !== 'string') {
      throw new TypeError(`${name}: expected a string, got ${v === null ? 'null' : typeof v}`);
    }
    last = v;
    // Most ids need no escape: quoted as they are, without a JSON.stringify call (whose fixed
    // cost is most of it for a short string; a guard serving many sessions meets a new one on
    // nearly every call).
    return (json = NEEDS_ESCAPE.test(v) ? JSON.stringify(v) : `"${v}"`);
  };
}
/**
 * The characters JSON.stringify may escape: controls, `"`, `\\` and lone surrogates (this matches
 * any surrogate; an id with a paired one goes through JSON.stringify too, which keeps it).
 */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const sessionJson = idField('session');
const toolJson = idField('tool');
const runJson = idField('run');
const callIdJson = idField('callId');
const agentJson = idField('agent');
const parentJson = idField('parentSession');

/**
 * The optional `run`, `callId`, `agent` and `parentSession` fields (no array built: this runs
 * on every call).
 */
function runFields(o, withCallId = true) {
  let out = '';
  if (o.run !== undefined && o.run !== null) out = `,"run":${runJson(o.run)}`;
  if (withCallId && o.callId !== undefined && o.callId !== null) out += `,"callId":${callIdJson(o.callId)}`;
  if (o.agent !== undefined && o.agent !== null) out += `,"agent":${agentJson(o.agent)}`;
  if (o.parentSession !== undefined && o.parentSession !== null) {
    out += `,"parentSession":${parentJson(o.parentSession)}`;
  }
  return out;
}

// The arguments' JSON of the last call or outcome line written (see lastArgsJson).
let argsJson = '';

/** `{"type":"call",...}`: the event beforeCall applies. */
function callLine(session, tool, args, opts = {}) {
  return (
    `{"type":"call","session":${sessionJson(session)},"tool":${toolJson(tool)}` +
    runFields(opts) +
    `,"args":${(argsJson = toJson(args, 'args'))}}`
  );
}

/**
 * The arguments' JSON in the last line callLine or outcomeLine wrote: the guard compares an
 * outcome's with its call's, to let the engine reuse the call's digest.
 */
function lastArgsJson() {
  return argsJson;
}

/**
 * `{"type":"outcome",...}`: the event afterCall applies, or null when the tool returned
 * undefined and threw nothing (OpenClaw records nothing then). `knownArgsJson`, when given, is
 * the arguments' JSON already written (see sameFlat), used instead of writing it again.
 */
function outcomeLine(session, tool, args, outcome = {}, knownArgsJson = null) {
  if (outcome === null || typeof outcome !== 'object') {
    throw new TypeError('afterCall: the fourth argument is { result } or { error }');
  }
  const hasError = outcome.error !== undefined;
  if (hasError && outcome.result !== undefined) {
    throw new TypeError('afterCall: give either result or error, not both');
  }
  if (!hasError && outcome.result === undefined) return null;
  const value = hasError ? `"error":${errorJson(outcome.error, 'error')}` : `"result":${toJson(outcome.result, 'result')}`;
  return (
    `{"type":"outcome","session":${sessionJson(session)},"tool":${toolJson(tool)}` +
    runFields(outcome) +
    `,"args":${(argsJson = knownArgsJson ?? toJson(args, 'args'))},${value}}`
  );
}

// Most tool arguments are one flat object ({path, offset, limit}). For those, beforeCall keeps
// a snapshot of the keys and values it wrote, and afterCall compares the arguments it gets with
// it, key by key, instead of writing them to JSON again: the same own keys in the same order
// with the same primitive values write the same JSON text (JSON.stringify of a plain object
// with data properties depends on nothing else). The snapshot is taken right after the JSON is
// written, with no user code run in between (the engine calls none); a getter is read again
// at each comparison, so a value it changes between the two calls is seen. A getter that
// answers each read differently may have given the snapshot another value than the JSON
// (docs/typescript.md, "JavaScript values"); that is not checked, which would mean reading
// each property's descriptor on every call.

/** The most keys a snapshot keeps (larger arguments are written again). */
const SNAPSHOT_KEYS = 32;

/**
 * `[key0, value0, key1, value1, ...]` of a plain object whose own enumerable values are all
 * strings, booleans, finite numbers or null (what JSON.stringify writes as they are), else null.
 */
function flatSnapshot(v) {
  if (v === null || typeof v !== 'object') return null;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return null;
  const snap = [];
  for (const k in v) {
    if (!Object.prototype.hasOwnProperty.call(v, k) || snap.length >= 2 * SNAPSHOT_KEYS) return null;
    const x = v[k];
    switch (typeof x) {
      case 'string':
      case 'boolean':
        break;
      case 'number':
        if (!Number.isFinite(x)) return null;
        break;
      case 'object':
        if (x === null) break;
        return null;
      default:
        return null;
    }
    snap.push(k, x);
  }
  return snap;
}

/**
 * True when `v` is a plain object with exactly the snapshot's own keys, in its order, holding
 * the same values: then its JSON is the one written when the snapshot was taken.
 */
function sameFlat(v, snap) {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  let i = 0;
  for (const k in v) {
    if (i >= snap.length || k !== snap[i] || v[k] !== snap[i + 1]) return false;
    if (!Object.prototype.hasOwnProperty.call(v, k)) return false;
    i += 2;
  }
  return i === snap.length;
}

/** `{"type":"compaction",...}`: the event onCompaction applies. */
function compactionLine(session, opts = {}) {
  return (
    `{"type":"compaction","session":${sessionJson(session)}` +
    runFields(opts, false) +
    '}'
  );
}

/**
 * An events.md event given as an object (its undefined fields left out, as JSON.stringify
 * would; `error` formatted as OpenClaw formats a thrown value) or as one JSON line.
 */
function eventLine(event) {
  if (typeof event === 'string') return event;
  if (event === null || typeof event !== 'object' || Array.isArray(event)) {
    throw new TypeError('event: expected an object (one events.md event) or one JSON line');
  }
  const parts = [];
  for (const k of Object.keys(event)) {
    const v = event[k];
    if (v === undefined) continue;
    const json = k === 'error' ? errorJson(v, 'event.error') : toJson(v, `event[${JSON.stringify(k)}]`);
    parts.push(`${JSON.stringify(k)}:${json}`);
  }
  return `{${parts.join(',')}}`;
}

module.exports = {
  toJson,
  errorJson,
  callLine,
  outcomeLine,
  compactionLine,
  eventLine,
  lastArgsJson,
  flatSnapshot,
  sameFlat,
};
