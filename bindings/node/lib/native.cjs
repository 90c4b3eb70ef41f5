'use strict';
// Loads the addon built for this platform (scripts/build-node.sh puts it beside package.json).
const path = require('node:path');

function platformName() {
  const { platform, arch } = process;
  if (platform !== 'linux') return `${platform}-${arch}`;
  const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
  return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
}

const file = path.join(__dirname, '..', `loopguard.${platformName()}.node`);
let native;
try {
  native = require(file);
} catch (e) {
  const err = new Error(
    `loopguard: no native addon for ${platformName()} (${file}): ${e.message}. ` +
      'This package was built for linux-x64-gnu; build it for your platform with scripts/build-node.sh (needs Rust).',
  );
  err.cause = e;
  throw err;
}
module.exports = native;
