import type { Guard, RemoteGuard, CallDecision, Verdict } from '../index';

/** Where the protected tools report: the guard and the ids of the conversation. */
export interface ProtectOptions {
  guard: Guard | RemoteGuard;
  /** The session (a conversation, a chat id); "default" when absent. */
  session?: string;
  run?: string;
  agent?: string;
  logger?: { warn(message: string): void };
}

/** The tools with each `execute` guarded (blocked calls never run; warnings reach the model). */
export declare function protectTools<T extends Record<string, unknown>>(tools: T, options: ProtectOptions): T;

/** A stop condition (`stopWhen`) that ends the loop once loopguard ended the run. */
export declare function stopWhen(options: ProtectOptions): (state: unknown) => boolean;

/** The error a blocked call throws; the model receives its message as the tool's error. */
export declare class LoopGuardBlockedError extends Error {
  decision: CallDecision | null;
}

/**
 * The verdict of the session's run once loopguard ended it (a call that ended it threw a
 * `RunEndedError`, exported by `loopguard`, with the same verdict), or null.
 */
export declare function runVerdict(options: ProtectOptions): Verdict | null;
