'use strict';
// `Guard.remote(url, { token })`: the Guard API answered by `loopguard serve`.
//
// Each call posts one events.md event to `POST {url}/v1/events` (the same JSON the local Guard
// applies) and answers with the same decision objects. Fail open, loudly: when the server cannot
// be reached (connection refused, timeout, a 5xx such as 503 from a store that is down) the call
// is allowed, the outcome is not recorded, and a warning is logged. A malformed event is an
// EventError (the server's message, naming the field), as it is locally.
const { callLine, outcomeLine, compactionLine, eventLine } = require('./convert.cjs');
const { EventError, LoopguardError } = require('./errors.cjs');
const { toDecision } = require('./decision.cjs');

// What a call, an outcome and a compaction become when the server is unreachable.
const FAIL_OPEN = { call: 'allow', outcome: 'ignored', compaction: 'ignored' };

class RemoteGuard {
  #base;
  #headers;
  #timeout;
  #logger;
  #token;

  /**
   * @param {string|URL} url the server, e.g. http://127.0.0.1:7878
   * @param {{token?: string, timeout?: number, logger?: {warn: Function}}} [options] timeout in
   *   seconds (5)
   */
  constructor(url, options = {}) {
    let parsed;
    try {
      parsed = new URL(String(url));
    } catch {
      throw new TypeError(`Guard.remote: expected an http:// or https:// URL, got ${JSON.stringify(String(url))}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new TypeError(`Guard.remote: expected an http:// or https:// URL, got ${JSON.stringify(String(url))}`);
    }
    const { token, timeout = 5, logger = console } = options ?? {};
    this.url = String(url).replace(/\/+$/, '');
    this.#base = this.url;
    this.#headers = { 'content-type': 'application/json', accept: 'application/json' };
    if (token !== undefined && token !== null) {
      this.#token = String(token);
      this.#headers.authorization = `Bearer ${token}`;
    }
    this.#timeout = timeout * 1000;
    this.#logger = logger;
  }

  async #request(method, path, body) {
    const response = await fetch(this.#base + path, {
      method,
      headers: this.#headers,
      body,
      signal: AbortSignal.timeout(this.#timeout),
    });
    return { status: response.status, text: await response.text() };
  }

  #warn(kind, why) {
    this.#logger.warn(`loopguard: ${this.url} ${why}; failing open: the ${kind} is ${FAIL_OPEN[kind]}`);
  }

  /** Posts one event; its record, or null after failing open. */
  async #apply(kind, body) {
    let reply;
    try {
      reply = await this.#request('POST', '/v1/events', body);
    } catch (e) {
      this.#warn(kind, `unreachable (${e.cause?.code ?? e.name}: ${e.cause?.message ?? e.message})`);
      return null;
    }
    if (reply.status === 200) return JSON.parse(reply.text);
    const error = parseError(reply);
    if (reply.status >= 500) {
      this.#warn(kind, `answered ${reply.status} (${error.error})`);
      return null;
    }
    if (reply.status === 400 || reply.status === 413) throw new EventError(error.error, error.field ?? null);
    throw new LoopguardError(`${this.url}: HTTP ${reply.status}: ${error.error}`);
  }

  /** The before-tool-call check (see Guard#beforeCall). */
  async beforeCall(session, tool, args, opts = {}) {
    const record = await this.#apply('call', callLine(session, tool, args, opts ?? {}));
    return toDecision(record ?? failOpen('call', { session, tool, ...opts }));
  }

  /** Records a tool's result or error (see Guard#afterCall). */
  async afterCall(session, tool, args, outcome = {}) {
    const line = outcomeLine(session, tool, args, outcome ?? {});
    if (line === null) {
      // A tool that returned undefined: OpenClaw records nothing, so nothing is sent.
      return { ...toDecision(failOpen('outcome', { session, tool, ...outcome })), action: 'recorded', resultHash: null };
    }
    const record = await this.#apply('outcome', line);
    return toDecision(record ?? failOpen('outcome', { session, tool, ...outcome }));
  }

  /** Arms the post-compaction guard (see Guard#onCompaction). */
  async onCompaction(session, opts = {}) {
    const record = await this.#apply('compaction', compactionLine(session, opts ?? {}));
    return toDecision(record ?? failOpen('compaction', { session, ...opts }));
  }

  /** Applies one events.md event; its decision record (`failOpen: true` when not applied). */
  async event(event) {
    const body = eventLine(event);
    let echo = event;
    if (typeof event === 'string') {
      try {
        echo = JSON.parse(event);
      } catch {
        echo = {};
      }
    }
    echo = echo !== null && typeof echo === 'object' ? echo : {};
    const kind = Object.hasOwn(FAIL_OPEN, echo.type) ? echo.type : 'call';
    const record = await this.#apply(kind, body);
    return record ?? { ...failOpen(kind, echo), failOpen: true };
  }

  /**
   * A read or a forget that fails open: the server's reply, or null after a logged warning
   * when it cannot be reached or answers 5xx.
   */
  async #query(method, path, what, fallback) {
    let reply;
    try {
      reply = await this.#request(method, path);
    } catch (e) {
      this.#logger.warn(
        `loopguard: ${this.url} unreachable (${e.cause?.code ?? e.name}: ${e.cause?.message ?? e.message}); failing open: ${what} is ${fallback}`,
      );
      return null;
    }
    if (reply.status >= 500) {
      this.#logger.warn(`loopguard: ${this.url} answered ${reply.status} (${parseError(reply).error}); failing open: ${what} is ${fallback}`);
      return null;
    }
    return reply;
  }

  /** The server's view of a session, or null when it has none (or cannot be reached). */
  async session(id) {
    if (typeof id !== 'string') throw new TypeError('session: expected a string');
    const reply = await this.#query('GET', `/v1/sessions/${encodeURIComponent(id)}`, `session(${JSON.stringify(id)})`, 'null');
    if (reply === null || reply.status === 404) return null;
    if (reply.status === 200) return JSON.parse(reply.text);
    throw new LoopguardError(`${this.url}: HTTP ${reply.status}: ${parseError(reply).error}`);
  }

  /**
   * Every session the server holds for this caller (its tenant's, with a token), as
   * `session()` shows each; [] when the server cannot be reached (or is a loopguard serve
   * without `GET /v1/sessions`, which is logged too).
   */
  async sessions() {
    const reply = await this.#query('GET', '/v1/sessions', 'sessions()', '[]');
    if (reply === null) return [];
    if (reply.status === 200) return JSON.parse(reply.text);
    if (reply.status === 404 || reply.status === 405) {
      this.#logger.warn(`loopguard: ${this.url} does not list sessions (HTTP ${reply.status}: a loopguard serve older than GET /v1/sessions); sessions() is []`);
      return [];
    }
    throw new LoopguardError(`${this.url}: HTTP ${reply.status}: ${parseError(reply).error}`);
  }

  /** Forgets a session on the server; true when it existed (false when it cannot be reached). */
  async forget(id) {
    if (typeof id !== 'string') throw new TypeError('forget: expected a string');
    const reply = await this.#query('DELETE', `/v1/sessions/${encodeURIComponent(id)}`, `forget(${JSON.stringify(id)})`, 'false');
    if (reply === null || reply.status === 404) return false;
    if (reply.status === 204 || reply.status === 200) return true;
    throw new LoopguardError(`${this.url}: HTTP ${reply.status}: ${parseError(reply).error}`);
  }

  /**
   * What a worker thread passes to `Guard.attach` to talk to the same server with the same
   * options (a plain object: it crosses `postMessage`). The logger stays behind: the worker's
   * guard logs to its console unless `Guard.attach(handle, { logger })` says otherwise.
   */
  share() {
    return { remote: this.url, token: this.#token ?? null, timeout: this.#timeout / 1000 };
  }
}

function parseError(reply) {
  try {
    const parsed = JSON.parse(reply.text);
    if (parsed && typeof parsed === 'object' && typeof parsed.error === 'string') return parsed;
  } catch {
    // not JSON: the text itself
  }
  return { error: reply.text || `HTTP ${reply.status}` };
}

function failOpen(kind, echo) {
  const record = {
    type: kind,
    session: typeof echo.session === 'string' ? echo.session : 'default',
    run: echo.run ?? null,
    callId: echo.callId ?? null,
  };
  if (kind !== 'compaction') record.tool = echo.tool ?? null;
  record.decision = FAIL_OPEN[kind];
  return record;
}

module.exports = { RemoteGuard };
