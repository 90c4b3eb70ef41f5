'use strict';
// `loopguard`: OpenClaw's tool-call loop detection for JavaScript agents.
//
// Each call is turned into one events.md event (lib/convert.cjs) and applied by the Rust engine
// (the native addon), the same one `loopguard replay`, `loopguard serve` and the Python package
// use: identical events get identical decisions everywhere.
const fs = require('node:fs');
const {
  callLine,
  outcomeLine,
  compactionLine,
  eventLine,
  toJson,
  lastArgsJson,
  flatSnapshot,
  sameFlat,
} = require('./convert.cjs');
const errors = require('./errors.cjs');
const { RemoteGuard } = require('./remote.cjs');

const { native } = errors;
let addon;
const loadAddon = () => (addon ??= require('./native.cjs'));

/** The guard: sessions, OpenClaw's detectors, and one decision per event. */
class Guard {
  #native;
  /** The addon's engine number for `decide` (a function call, cheaper than a method's). */
  #engine;
  /**
   * The tool and the arguments' JSON of the last call this guard decided: an outcome with
   * the same ones lets the engine reuse that call's digest (src/lib.rs, SAME_ARGS).
   */
  #lastTool = null;
  #lastArgs = '';
  /** That call's `argsHash`: an outcome answered in the reused form (`R`, `N`) has the same. */
  #lastHash = null;
  /** The flat arguments' snapshot of that call (convert.cjs, flatSnapshot), or null. */
  #lastSnap = null;

  /**
   * @param {object} [options]
   * @param {string|URL|object|null} [options.config] a path to an OpenClaw config (JSON5 or
   *   JSON), an object holding one, or null for loop detection enabled with OpenClaw's defaults
   * @param {string} [options.store] "memory" (default) or "sqlite:PATH"
   * @param {string} [options.profile] "none" (default: tools as given), "openclaw",
   *   "claude-code" or "mcp"
   * @param {string} [options.mode] "enforce" (default) or "observe"
   * @param {number} [options.idleTtl] seconds after which an idle session is forgotten
   * @param {{warn: Function}} [options.logger] where config warnings go (console)
   */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError('Guard: options must be an object');
    }
    if (options[attachKey] !== undefined) {
      this.#native = native(() => loadAddon().NativeGuard.attach(options[attachKey]));
      this.#engine = this.#native.engine();
      return;
    }
    // A misspelled option would otherwise be dropped without a word (`profil`, `mod`).
    for (const key of Object.keys(options)) {
      if (!OPTIONS.includes(key)) {
        throw new TypeError(`Guard: unknown option ${JSON.stringify(key)} (the options are ${OPTIONS.join(', ')})`);
      }
    }
    const { config = null, store = 'memory', profile = 'none', mode = 'enforce', idleTtl = 86400 } = options;
    const logger = options.logger ?? console;
    let text = null;
    let origin = 'config';
    if (typeof config === 'string' || config instanceof URL) {
      origin = String(config instanceof URL ? config.pathname : config);
      try {
        text = fs.readFileSync(config, 'utf8');
      } catch (e) {
        throw new errors.ConfigError(`cannot read config ${origin}: ${e.message}`, { cause: e });
      }
    } else if (config !== null && config !== undefined) {
      if (typeof config !== 'object') {
        throw new TypeError('config: expected a path, an object or null');
      }
      text = toJson(config, 'config');
    }
    for (const [name, v] of [
      ['store', store],
      ['profile', profile],
      ['mode', mode],
    ]) {
      if (typeof v !== 'string') throw new TypeError(`${name}: expected a string, got ${typeof v}`);
    }
    if (typeof idleTtl !== 'number') throw new TypeError(`idleTtl: expected a number of seconds`);
    this.#native = native(() => new (loadAddon().NativeGuard)(text, origin, store, profile, mode, idleTtl));
    this.#engine = this.#native.engine();
    for (const w of this.#native.diagnostics()) logger.warn(`loopguard: ${w}`);
  }

  /** Applies one event line; returns its decision record. */
  #apply(line) {
    return JSON.parse(native(() => this.#live().apply(line)));
  }

  /** The addon's guard, or the error of a closed one. */
  #live() {
    if (this.#native === null) throw closedError();
    return this.#native;
  }

  /**
   * Lets go of the guard: its store is closed (a SQLite file released) once no thread holds it
   * (`share`/`attach`). Every later call is an error; closing twice does nothing. Also what
   * `using guard = new Guard(...)` calls (`Symbol.dispose`).
   */
  close() {
    if (this.#native === null) return;
    this.#native.close();
    this.#native = null;
    // No engine has number 0 (src/lib.rs, `register`): a later decision fails, and says why.
    this.#engine = 0;
  }

  [Symbol.dispose ?? Symbol.for('nodejs.dispose')]() {
    this.close();
  }

  /**
   * Applies one event line; returns its decision as the API's object. The addon answers the
   * common decisions in a short form (src/lib.rs, `compact`): a tag letter and the digests'
   * hex, from which the object is built here with the strings the caller gave (the record
   * echoes them unchanged; their effect is 'proceed'); any other decision comes as the record's
   * JSON, `action` and the decision's `effect` (computed by the engine in the guard's mode) first.
   */
  #decide(line, session, tool, o, engine = this.#engine) {
    let r;
    try {
      if (line.length <= INBOX_CHARS) {
        // Most lines: written into this thread's inbox, read there by a call of no arguments.
        inbox ??= openInbox();
        inboxHead[0] = engine;
        inboxHead[1] = writeUtf8(inbox, line, INBOX_HEAD);
        inboxHead[2] = inboxWrites = (inboxWrites + 1) | 0;
        r = addon.decideInbox();
        if (r === '') {
          // Another instance of this module registered its inbox since (src/lib.rs).
          addon.setInbox(inbox);
          r = addon.decideInbox();
        }
      } else {
        r = addon.decide(engine, line);
      }
    } catch (e) {
      if (this.#native === null) throw closedError();
      native(() => {
        throw e;
      });
    }
    switch (r.charCodeAt(0)) {
      case 97: // a: a call allowed
        return {
          action: 'allow',
          effect: 'proceed',
          type: 'call',
          session,
          run: o.run ?? null,
          callId: o.callId ?? null,
          tool,
          argsHash: `${tool}:${r.slice(1)}`,
        };
      case 114: // r: an outcome recorded
        return recorded(session, tool, o, hexHash(tool, r), r.slice(65));
      case 101: // e: an outcome recorded, an error's hash
        return recorded(session, tool, o, hexHash(tool, r), `error:${r.slice(65)}`);
      case 110: // n: an outcome recorded, no result hash
        return recorded(session, tool, o, hexHash(tool, r), null);
      // The call's digest reused (src/lib.rs, compact_reused): its argsHash is this call's.
      case 82: // R: an outcome recorded; the rest is resultHash (`error:` too)
        return recorded(session, tool, o, this.#lastHash, r.slice(1));
      case 78: // N: an outcome recorded, no result hash
        return recorded(session, tool, o, this.#lastHash, null);
      default:
        return JSON.parse(r);
    }
  }

  /**
   * The before-tool-call check: on "block" do not run the tool (give the model `message`).
   * @returns {import('../index').CallDecision}
   */
  beforeCall(session, tool, args, opts = NO_OPTIONS) {
    const o = opts ?? NO_OPTIONS;
    this.#lastTool = null; // until this call is decided
    const decision = this.#decide(callLine(session, tool, args, o), session, tool, o);
    this.#lastTool = tool;
    this.#lastHash = decision.argsHash;
    this.#lastArgs = lastArgsJson();
    this.#lastSnap = flatSnapshot(args);
    return decision;
  }

  /**
   * Records what a tool returned (`{ result }`) or threw (`{ error }`); on "abort" stop the run.
   * @returns {import('../index').OutcomeDecision}
   */
  afterCall(session, tool, args, outcome = {}) {
    const o = outcome ?? {};
    // Flat arguments equal to the last call's are not written to JSON again (sameFlat).
    const snap = tool === this.#lastTool ? this.#lastSnap : null;
    const known = snap !== null && sameFlat(args, snap) ? this.#lastArgs : null;
    const line = outcomeLine(session, tool, args, o, known);
    if (line === null) return undefinedResult(session, tool, o);
    // The engine reuses the digest of this guard's last call when the tool and the
    // arguments' JSON are that call's (the high bit of the engine number says so).
    const same = tool === this.#lastTool && (known !== null || lastArgsJson() === this.#lastArgs);
    return this.#decide(line, session, tool, o, same ? (this.#engine | SAME_ARGS) >>> 0 : this.#engine);
  }

  /** A context compaction finished: arms the post-compaction guard of the session and run. */
  onCompaction(session, opts = {}) {
    return this.#decide(compactionLine(session, opts ?? {}), session, null, opts ?? {});
  }

  /**
   * Applies one events.md event (an object, or one JSON line) and returns its decision record
   * exactly as `loopguard replay --json` writes it, without `line`.
   */
  event(event) {
    return this.#apply(eventLine(event));
  }

  /** What the guard knows about a session (counters, recent decisions), or null. */
  session(id) {
    if (typeof id !== 'string') throw new TypeError('session: expected a string');
    const json = native(() => this.#live().session(id));
    return json === null ? null : JSON.parse(json);
  }

  /** Every session the guard holds. */
  sessions() {
    return JSON.parse(native(() => this.#live().sessions()));
  }

  /** Forgets a session; true when it existed. */
  forget(id) {
    if (typeof id !== 'string') throw new TypeError('forget: expected a string');
    return native(() => this.#live().forget(id));
  }

  /**
   * Records that a run of the session is over (a decision's effect was 'end_run'), with the
   * message its later calls are refused with. Kept with the session in the guard's store: with a
   * persistent store (sqlite:PATH), a restarted host still finds it (`stoppedRun`). One stopped
   * run per session, the latest.
   */
  stopRun(session, opts = NO_OPTIONS) {
    if (typeof session !== 'string') throw new TypeError('stopRun: expected a string session');
    const { run, message } = opts ?? NO_OPTIONS;
    if (typeof message !== 'string') throw new TypeError('stopRun: expected a string message');
    native(() => this.#live().stopRun(session, runName(run, 'stopRun'), message));
  }

  /** The message `stopRun` recorded for a run of the session, or null when it is not stopped. */
  stoppedRun(session, opts = NO_OPTIONS) {
    if (typeof session !== 'string') throw new TypeError('stoppedRun: expected a string session');
    return native(() => this.#live().stoppedRun(session, runName((opts ?? NO_OPTIONS).run, 'stoppedRun')));
  }

  /**
   * A handle a worker thread passes to `Guard.attach` to use this same guard (same sessions,
   * each update atomic). The guard lives while some thread holds it.
   */
  share() {
    return native(() => this.#live().share());
  }

  /**
   * The guard behind a handle from `guard.share()` (in another thread of this process): the
   * same local guard, or, for a remote guard's handle, a remote guard on the same server.
   */
  static attach(handle, options = {}) {
    if (handle !== null && typeof handle === 'object' && typeof handle.remote === 'string') {
      return new RemoteGuard(handle.remote, { token: handle.token ?? undefined, timeout: handle.timeout, ...options });
    }
    if (!Number.isInteger(handle)) throw new TypeError('Guard.attach: expected what guard.share() returned');
    return new Guard({ [attachKey]: handle });
  }

  /**
   * The same API answered by `loopguard serve` at `url` (every method async). Fails open
   * with a logged warning when the server cannot be reached.
   */
  static remote(url, options = {}) {
    return new RemoteGuard(url, options);
  }
}

const attachKey = Symbol('loopguard.attach');
/** The options `new Guard` takes. */
const OPTIONS = Object.freeze(['config', 'store', 'profile', 'mode', 'idleTtl', 'logger']);
/** The error of a call on a closed guard. */
function closedError() {
  return new errors.LoopguardError('loopguard: the guard is closed (guard.close() was called)');
}
/** The options of a call given none (shared: nothing writes to it). */
const NO_OPTIONS = Object.freeze({});
/** The flag bit of `decide`'s engine number (src/lib.rs, SAME_ARGS). */
const SAME_ARGS = 2 ** 31;

// This thread's inbox (src/lib.rs, `decide_inbox`): the engine number, the line's length and
// the write's number (three u32 in the machine's byte order), then the line's UTF-8 bytes,
// which V8's own writer puts there. Private to this module: nothing else may write to it or
// detach it. A line of up to INBOX_CHARS UTF-16 units always fits (three bytes at most each);
// a longer one is passed as a string.
const INBOX_HEAD = 12;
const INBOX_BYTES = 1 << 16;
const INBOX_CHARS = Math.floor((INBOX_BYTES - INBOX_HEAD) / 3);
let inbox = null;
let inboxHead = null;
let inboxWrites = 0;
// `buf.utf8Write(text, offset)` is what `buf.write(text, offset)` calls after checking its
// arguments (Node's own Buffer method since its first versions, not in its docs); called
// directly it costs about 1.4% less a pair (callgrind). `write` where it is missing.
const writeUtf8 =
  typeof Buffer.prototype.utf8Write === 'function'
    ? (b, text, at) => b.utf8Write(text, at)
    : (b, text, at) => b.write(text, at);
function openInbox() {
  // Its own memory (not a slice of Buffer's shared pool), which the addon keeps.
  const b = Buffer.allocUnsafeSlow(INBOX_BYTES);
  inboxHead = new Uint32Array(b.buffer, b.byteOffset, 3);
  addon.setInbox(b);
  return b;
}

/** A run as `stopRun` keys it: its name, or '' for none. */
function runName(run, who) {
  if (run === undefined || run === null) return '';
  if (typeof run !== 'string') throw new TypeError(`${who}: expected a string run`);
  return run;
}

/** An outcome recorded, in the record's key order. */
function recorded(session, tool, o, argsHash, resultHash) {
  return {
    action: 'recorded',
    effect: 'proceed',
    type: 'outcome',
    session,
    run: o.run ?? null,
    callId: o.callId ?? null,
    tool,
    argsHash,
    resultHash,
  };
}

/** The `argsHash` of a short answer `r` that carries the arguments' hex after its tag letter. */
function hexHash(tool, r) {
  return `${tool}:${r.slice(1, 65)}`;
}

/** A tool returned undefined and threw nothing: OpenClaw records nothing, nor does loopguard. */
function undefinedResult(session, tool, outcome) {
  return {
    action: 'recorded',
    effect: 'proceed',
    type: 'outcome',
    session,
    run: outcome.run ?? null,
    callId: outcome.callId ?? null,
    tool,
    resultHash: null,
  };
}

module.exports = {
  Guard,
  RemoteGuard,
  LoopguardError: errors.LoopguardError,
  EventError: errors.EventError,
  ConfigError: errors.ConfigError,
  StoreError: errors.StoreError,
  RunEndedError: errors.RunEndedError,
  verdictOf: errors.verdictOf,
  toEventJson: toJson,
};
