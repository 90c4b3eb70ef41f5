// Types of the `loopguard` package (hand-written; test/types.test.mjs checks them against the
// addon and the JavaScript half).

/** Any JavaScript value that becomes an events.md JSON value (see docs/typescript.md). */
export type JsonLike = unknown;

/** The detectors a decision can name. */
export type Detector =
  | 'generic_repeat'
  | 'known_poll_no_progress'
  | 'ping_pong'
  | 'unknown_tool_repeat'
  | 'global_circuit_breaker'
  | 'compaction_loop_persisted'
  // loopguard's own detectors (the strict profile, or switched on in the `loopguard` config block)
  | (string & {});

/**
 * What to do with a decision, computed by the engine (one function for every front end):
 * 'proceed' (run the tool, or go on); 'notice' (run it and show the model `message`: an emitted
 * warning); 'refuse' (do not run it, give the model `message` as its result); 'end_run' (the run
 * is over: do not run the tool, or, after an outcome, stop there, telling the model `message`).
 * In observe mode every decision is 'proceed'.
 */
export type Effect = 'proceed' | 'notice' | 'refuse' | 'ask' | 'end_run';

/** Fields every decision has. */
export interface DecisionBase {
  /** What to do (see `Effect`). */
  effect: Effect;
  type: 'call' | 'outcome' | 'compaction';
  session: string;
  run: string | null;
  callId: string | null;
  tool?: string | null;
  argsHash?: string;
  detector?: Detector;
  level?: 'warning' | 'critical';
  count?: number;
  /** What to tell the model (warn, block, abort). */
  message?: string;
  /** True when the call was let through because the server could not be reached (remote). */
  failOpen?: boolean;
}

/**
 * The decision before a tool call: on 'block' (effect 'refuse') do not run the tool. 'abort'
 * (the strict profile's second critical loop of a run, `second_critical_abort`; effect
 * 'end_run'): do not run it either, the run is over.
 */
export interface CallDecision extends DecisionBase {
  /** 'ask' (`loopguard.onCritical: "ask"`, effect 'ask'): the user decides; refused where nobody can be asked. */
  action: 'allow' | 'warn' | 'block' | 'ask' | 'abort';
  warningKey?: string;
  pairedTool?: string;
  /** Whether the model should be told (warnings are shown once per bucket of ten). */
  emitted?: boolean;
}

/** The decision after a tool call: on 'abort' (effect 'end_run') stop the run. */
export interface OutcomeDecision extends DecisionBase {
  action: 'recorded' | 'ignored' | 'abort';
  resultHash?: string | null;
}

/** The decision on a compaction. */
export interface CompactionDecision extends DecisionBase {
  action: 'armed' | 'ignored';
}

/** A decision record as `loopguard replay --json` writes it (without `line`). */
export interface DecisionRecord {
  type: 'call' | 'outcome' | 'compaction';
  session: string;
  run: string | null;
  callId: string | null;
  tool?: string;
  argsHash?: string;
  resultHash?: string | null;
  decision: 'allow' | 'warn' | 'block' | 'recorded' | 'ignored' | 'abort' | 'armed';
  detector?: Detector;
  level?: 'warning' | 'critical';
  count?: number;
  message?: string;
  warningKey?: string;
  pairedTool?: string;
  emitted?: boolean;
  failOpen?: boolean;
}

/** The optional ids of a call. */
export interface CallOptions {
  run?: string | null;
  callId?: string | null;
  agent?: string | null;
  /**
   * The session of the agent that launched this one (a sub-agent): the call is decided in its
   * own session, and the parent's `callsPerSession` budget counts it.
   */
  parentSession?: string | null;
}

/** What a tool returned or threw, with the ids of its call. */
export type Outcome = CallOptions & ({ result: JsonLike; error?: undefined } | { error: JsonLike; result?: undefined });

/** Options of `new Guard`. */
export interface GuardOptions {
  /** A path to an OpenClaw config (JSON5 or JSON), an object holding one, or null (enabled, defaults). */
  config?: string | URL | Record<string, unknown> | null;
  /** 'memory' (default) or 'sqlite:PATH'. */
  store?: string;
  /** 'none' (default: tools as given), 'openclaw', 'claude-code' or 'mcp'. */
  profile?: 'none' | 'openclaw' | 'claude-code' | 'mcp';
  /** 'enforce' (default) or 'observe'. */
  mode?: 'enforce' | 'observe';
  /** Seconds after which an idle session is forgotten (86400). */
  idleTtl?: number;
  /** Where config warnings go (console). */
  logger?: { warn(message: string): void };
}

/** What the guard knows about a session. */
export interface SessionInfo {
  session: string;
  calls: number;
  outcomes: number;
  warnings: number;
  blocks: number;
  aborts: number;
  /** Milliseconds since 1970 (UTC) of the last event. */
  lastSeen: number;
  /** The last decisions, oldest first, in the words of `/v1/events` (a warning kept back by
   * the once-per-ten de-duplication is `warn` with `emitted: false`); fields without a value
   * are left out, except `run` and `callId`. */
  recent: Array<{
    seq: number;
    ts: number;
    type: 'call' | 'outcome' | 'compaction';
    run: string | null;
    callId: string | null;
    tool?: string;
    decision: string;
    detector?: Detector;
    count?: number;
    message?: string;
    emitted?: boolean;
  }>;
}

/** The guard: sessions, OpenClaw's detectors, one decision per event. */
export declare class Guard {
  constructor(options?: GuardOptions);
  beforeCall(session: string, tool: string, args: JsonLike, options?: CallOptions): CallDecision;
  afterCall(session: string, tool: string, args: JsonLike, outcome: Outcome): OutcomeDecision;
  onCompaction(session: string, options?: { run?: string | null; agent?: string | null }): CompactionDecision;
  event(event: Record<string, unknown> | string): DecisionRecord;
  session(id: string): SessionInfo | null;
  sessions(): SessionInfo[];
  forget(id: string): boolean;
  /**
   * Records that a run of the session is over (effect 'end_run'), with the message to refuse its
   * later calls with; kept in the guard's store, so a host restarted on a persistent store
   * (sqlite:PATH) still finds it. One stopped run per session, the latest.
   */
  stopRun(session: string, opts: { run?: string | null; message: string }): void;
  /** The message `stopRun` recorded for a run of the session, or null when it is not stopped. */
  stoppedRun(session: string, opts?: { run?: string | null }): string | null;
  /** A handle for `Guard.attach` in a worker thread of this process. */
  share(): number;
  /**
   * Lets go of the guard: its store is closed (a SQLite file released) once no thread holds it.
   * Later calls throw a `LoopguardError`; closing twice does nothing.
   */
  close(): void;
  /** `close()`, for `using guard = new Guard(...)`. */
  [Symbol.dispose](): void;
  /** The guard behind a handle from `share()`: this process's guard, or a remote guard on the
   * same server for a `RemoteGuard`'s handle. */
  static attach(handle: number): Guard;
  static attach(handle: RemoteHandle, options?: RemoteOptions): RemoteGuard;
  static remote(url: string | URL, options?: RemoteOptions): RemoteGuard;
}

/** What `RemoteGuard.share()` returns: plain data, for `Guard.attach` in a worker thread. */
export interface RemoteHandle {
  remote: string;
  token: string | null;
  /** Seconds. */
  timeout: number;
}

/** Options of `Guard.remote`. */
export interface RemoteOptions {
  token?: string;
  /** Seconds (5). */
  timeout?: number;
  logger?: { warn(message: string): void };
}

/** The Guard API answered by `loopguard serve`; fails open with a warning when unreachable. */
export declare class RemoteGuard {
  constructor(url: string | URL, options?: RemoteOptions);
  readonly url: string;
  beforeCall(session: string, tool: string, args: JsonLike, options?: CallOptions): Promise<CallDecision>;
  afterCall(session: string, tool: string, args: JsonLike, outcome: Outcome): Promise<OutcomeDecision>;
  onCompaction(session: string, options?: { run?: string | null; agent?: string | null }): Promise<CompactionDecision>;
  event(event: Record<string, unknown> | string): Promise<DecisionRecord>;
  /** null when the server has no such session, or cannot be reached (logged). */
  session(id: string): Promise<SessionInfo | null>;
  /** The caller's sessions (`GET /v1/sessions`); [] when the server cannot be reached (logged). */
  sessions(): Promise<SessionInfo[]>;
  /** false when the session did not exist, or the server cannot be reached (logged). */
  forget(id: string): Promise<boolean>;
  /** A handle for `Guard.attach` in a worker thread: the same server and options. */
  share(): RemoteHandle;
}

/** Base class of loopguard's own errors. */
export declare class LoopguardError extends Error {}
/** An event loopguard cannot apply; `field` names the field. */
export declare class EventError extends LoopguardError {
  field: string | null;
}
/** A config OpenClaw would reject. */
export declare class ConfigError extends LoopguardError {}
/** The session store cannot be reached. */
export declare class StoreError extends LoopguardError {}

/**
 * The summary of the loop that ended a run (`verdictOf(decision)`, `RunEndedError.verdict`): the
 * decision that ended it had effect 'end_run' (`loopguard.onCritical: "end-run"`, the next critical
 * loop after an "ask", the strict profile's `second_critical_abort`, a loop that survived a context
 * compaction); 'refuse' when an integration's own option ended the run at a plain block.
 */
export interface Verdict {
  session: string;
  run: string | null;
  /** The tool whose call ended the run (null for a compaction). */
  tool: string | null;
  detector: Detector | null;
  count: number | null;
  /** What the model was told (`CRITICAL: ...`). */
  message: string;
  effect: Effect;
  /** The decision's action ('block', 'abort'). */
  action: string | null;
  level: 'warning' | 'critical' | null;
  callId: string | null;
}

/** The verdict of the decision that ended a run. */
export declare function verdictOf(decision: CallDecision | OutcomeDecision | DecisionBase): Verdict;

/** loopguard ended the agent's run: `verdict` says which loop and why; the message is the verdict's. */
export declare class RunEndedError extends LoopguardError {
  constructor(verdict: Verdict, options?: { cause?: unknown });
  readonly verdict: Verdict;
  /** The error of a decision that ended the run. */
  static of(decision: CallDecision | OutcomeDecision | DecisionBase): RunEndedError;
}

/** A JavaScript value as the events.md JSON loopguard applies (TypeError naming `root` and the path). */
export declare function toEventJson(value: unknown, root: string): string;

declare const loopguard: {
  Guard: typeof Guard;
  RemoteGuard: typeof RemoteGuard;
  LoopguardError: typeof LoopguardError;
  EventError: typeof EventError;
  ConfigError: typeof ConfigError;
  StoreError: typeof StoreError;
  RunEndedError: typeof RunEndedError;
  verdictOf: typeof verdictOf;
  toEventJson: typeof toEventJson;
};
export default loopguard;

declare global {
  interface SymbolConstructor {
    /** The explicit resource management symbol (Node 20.4+; `lib.esnext.disposable`). */
    readonly dispose: unique symbol;
  }
}
