import m from './ai-sdk.cjs';

export const { protectTools, stopWhen, LoopGuardBlockedError } = m;
export default m;
