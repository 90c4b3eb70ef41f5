import m from './ai-sdk.cjs';

export const { protectTools, stopWhen, runVerdict, LoopGuardBlockedError, RunEndedError } = m;
export default m;
