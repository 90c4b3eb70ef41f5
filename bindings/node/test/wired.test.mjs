// A guard that looks installed but does nothing says so: a given config that leaves detection off
// is reported once, naming the setting; a misplaced block and misspelled options are errors; the
// store, profile and nesting errors say what is wrong; close() releases the store. The engine,
// the AI SDK wrapper and the SQLite store are the real ones from the packed package.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Guard, ConfigError, StoreError, LoopguardError } from 'loopguard';
import { protectTools } from 'loopguard/ai-sdk';

const logger = () => {
  const lines = [];
  return { lines, warn: (m) => lines.push(String(m)) };
};

/** The decisions of `n` identical calls, each with the same result. */
function identical(guard, n, session = 's') {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(guard.beforeCall(session, 'read', { path: '/a' }));
    guard.afterCall(session, 'read', { path: '/a' }, { result: 'same' });
  }
  return out;
}

test('no config at all: detection on with OpenClaw defaults, nothing logged', () => {
  const log = logger();
  const d = identical(new Guard({ logger: log }), 21);
  assert.equal(d[10].action, 'warn');
  assert.equal(d[20].action, 'block');
  assert.deepEqual(log.lines, []);
});

test('a given config that leaves detection off keeps OpenClaw meaning and says so once, naming the setting', () => {
  for (const config of [{}, { tools: { loopDetection: { warningThreshold: 3 } } }]) {
    const log = logger();
    const guard = new Guard({ config, logger: log });
    const d = identical(guard, 30);
    assert.ok(d.every((x) => x.action === 'allow'), `${JSON.stringify(config)}: parity, the rolling detectors are off`);
    assert.equal(log.lines.length, 1, log.lines.join('\n'));
    assert.match(log.lines[0], /^loopguard: config: tools\.loopDetection\.enabled is not true: the rolling-history detectors are off/);
  }
});

test('a loopDetection block outside tools, or its settings at the top level, is an error with a hint', () => {
  for (const config of [{ loopDetection: { enabled: true, warningThreshold: 3 } }, { enabled: true, warningThreshold: 3 }]) {
    assert.throws(
      () => new Guard({ config, logger: logger() }),
      (e) => e instanceof ConfigError && /not read at the top level/.test(e.message) && /\{ tools: \{ loopDetection: /.test(e.message),
      JSON.stringify(config),
    );
  }
});

test('misspelled options are errors naming the option and the valid ones', () => {
  for (const [options, name] of [
    [{ profil: 'strict' }, 'profil'],
    [{ mod: 'observe' }, 'mod'],
  ]) {
    assert.throws(
      () => new Guard(options),
      (e) => e instanceof TypeError && e.message.includes(`"${name}"`) && e.message.includes('config, store, profile, mode, idleTtl, logger'),
    );
  }
});

test('the profile error lists the choices once', () => {
  assert.throws(
    () => new Guard({ profile: 'strict' }),
    (e) => e instanceof TypeError && e.message.split('claude-code').length === 2 && /unknown tool profile `strict`/.test(e.message),
  );
});

test('a Redis URL says this build has no Redis store, not that the form is not one of a list naming it', () => {
  assert.throws(
    () => new Guard({ store: 'redis://user:secret@127.0.0.1:6399' }),
    (e) =>
      e instanceof StoreError &&
      /no Redis store/.test(e.message) &&
      !/expected `memory`/.test(e.message) &&
      !e.message.includes('secret') &&
      /loopguard serve --store redis:\/\/user:\*\*\*@127\.0\.0\.1:6399/.test(e.message),
  );
});

/** How many of this process's file descriptors are open on `file`. */
function openOn(file) {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === file) n += 1;
    } catch {
      // closed while listing
    }
  }
  return n;
}

test('close() and Symbol.dispose release a SQLite store; later calls say the guard is closed', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loopguard-close-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const close of [(g) => g.close(), (g) => g[Symbol.dispose]()]) {
    const file = path.join(dir, `state-${Math.random().toString(36).slice(2)}.db`);
    const guard = new Guard({ store: `sqlite:${file}` });
    identical(guard, 3);
    assert.ok(openOn(file) > 0, 'the store holds the file open');
    close(guard);
    assert.equal(openOn(file), 0, 'the file is released');
    guard.close(); // twice: nothing
    assert.throws(() => guard.beforeCall('s', 'read', {}), (e) => e instanceof LoopguardError && /the guard is closed/.test(e.message));
    assert.throws(() => guard.sessions(), (e) => e instanceof LoopguardError && /the guard is closed/.test(e.message));
    // The sessions are in the file, for the next guard.
    const again = new Guard({ store: `sqlite:${file}` });
    assert.equal(again.session('s').calls, 3);
    again.close();
  }
});

test('a result holding an undefined key is said once, not on every call', async () => {
  const log = logger();
  const tools = protectTools(
    { probe: { execute: async () => ({ ok: true, extra: undefined }) } },
    { guard: new Guard(), session: 'u', logger: log },
  );
  for (let i = 0; i < 20; i++) await tools.probe.execute({ q: 1 }, { toolCallId: `c${i}`, messages: [] });
  const about = log.lines.filter((l) => l.includes('undefined'));
  assert.equal(about.length, 1, log.lines.join('\n'));
  assert.match(about[0], /result\["extra"\]/);
});

test('5,000-deep nesting is a clean error naming the depth, in JavaScript and in the engine', () => {
  let deep = 'leaf';
  for (let i = 0; i < 5000; i++) deep = { d: deep };
  const guard = new Guard();
  assert.throws(
    () => guard.beforeCall('s', 'read', deep),
    (e) => /nested deeper than \d+ levels/.test(e.message) && !/call stack/.test(e.message),
  );
  const line = `{"type":"call","session":"s","tool":"read","args":${'{"d":'.repeat(5000)}1${'}'.repeat(5000)}}`;
  assert.throws(
    () => guard.event(line),
    (e) => /deeper than|nesting|depth/i.test(e.message) && !/call stack/.test(e.message),
  );
});
