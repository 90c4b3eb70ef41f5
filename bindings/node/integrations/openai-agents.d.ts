import type { Guard, RemoteGuard } from '../index';

/** Where the guardrails report. */
export interface GuardrailOptions {
  guard: Guard | RemoteGuard;
  /** The session (a conversation); "default" when absent. */
  session?: string;
  run?: string;
  agent?: string;
  logger?: { warn(message: string): void };
}

/** The SDK's tool input and output guardrail objects for one session. */
export declare function loopGuardToolGuardrails(options: GuardrailOptions): {
  input: { type: 'tool_input'; name: string; run(data: any): Promise<any> };
  output: { type: 'tool_output'; name: string; run(data: any): Promise<any> };
};

/** Adds the guardrails to every function tool of an Agent; returns the agent. */
export declare function protectAgent<A>(agent: A, options: GuardrailOptions): A;
