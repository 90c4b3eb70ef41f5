import m from './common.cjs';

export const {
  before,
  after,
  isStopped,
  markStopped,
  runVerdict,
  keepNotice,
  takeNotice,
  refuses,
  endsRun,
  notices,
  withWarning,
  openclawShown,
  openclawProfileFor,
  modelView,
  checkContext,
} = m;
export default m;
