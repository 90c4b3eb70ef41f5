import m from './ai-sdk.cjs';

export const { protectTools, stopWhen, runVerdict, LoopGuardBlockedError } = m;
export default m;
