// Guard.remote against a real `loopguard serve` started here: the same decisions as a local
// Guard for the same calls; failing open, with a warning, when the server cannot be reached.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { Guard, EventError, RemoteGuard } from 'loopguard';
import { freePort, recordingLogger, startServe } from './helpers.mjs';

let server;
before(async () => {
  server = await startServe();
});
after(async () => {
  await server?.stop();
});

const strip = ({ ...d }) => d;

test('a remote guard decides as a local one: 21 identical reads, warning at 11, block at 21', async () => {
  const remote = Guard.remote(server.url);
  const local = new Guard();
  for (let i = 1; i <= 21; i++) {
    const args = { path: '/same.txt', n: -0, big: 1n };
    const [r, l] = [await remote.beforeCall('s21', 'read', args, { callId: `c${i}` }), local.beforeCall('s21', 'read', args, { callId: `c${i}` })];
    assert.deepEqual(strip(r), strip(l), `call ${i}`);
    if (i === 11) assert.equal(r.action, 'warn');
    if (i === 21) assert.equal(r.action, 'block');
    if (r.action !== 'block') {
      const outcome = { result: { content: [{ type: 'text', text: 'same' }] }, callId: `c${i}` };
      assert.deepEqual(await remote.afterCall('s21', 'read', args, outcome), local.afterCall('s21', 'read', args, outcome));
    }
  }
  const info = await remote.session('s21');
  assert.equal(info.calls, 21);
  assert.equal(info.blocks, 1);
  assert.equal(await remote.forget('s21'), true);
  assert.equal(await remote.session('s21'), null);
});

test('remote event(), onCompaction and bad input', async () => {
  const remote = Guard.remote(`${server.url}/`);
  const record = await remote.event({ type: 'call', session: 'ev', tool: 'read', args: { a: 1 } });
  assert.deepEqual(record, new Guard().event({ type: 'call', session: 'ev', tool: 'read', args: { a: 1 } }));
  assert.equal((await remote.onCompaction('ev', { run: 'r1' })).action, 'armed');
  await assert.rejects(remote.event({ type: 'outcome', tool: 'x' }), (e) => e instanceof EventError && /result/.test(e.message));
  await assert.rejects(remote.beforeCall('ev', 'read', { a: undefined }), TypeError);
});

test('sessions(), session() and forget() answer as a local guard does', async () => {
  const remote = Guard.remote(server.url);
  const local = new Guard();
  for (const [session, n] of [
    ['list-a', 3],
    ['list-b', 1],
  ]) {
    for (let i = 0; i < n; i++) {
      await remote.beforeCall(session, 'read', { i });
      local.beforeCall(session, 'read', { i });
    }
  }
  const counts = (all) =>
    Object.fromEntries(all.filter((s) => s.session.startsWith('list-')).map((s) => [s.session, [s.calls, s.recent.length]]));
  assert.deepEqual(counts(await remote.sessions()), { 'list-a': [3, 3], 'list-b': [1, 1] });
  assert.deepEqual(counts(await remote.sessions()), counts(local.sessions()));
  const { lastSeen: _r, recent: rr, ...r } = await remote.session('list-a');
  const { lastSeen: _l, recent: lr, ...l } = local.session('list-a');
  assert.deepEqual(r, l);
  assert.deepEqual(rr.map(({ ts: _, ...x }) => x), lr.map(({ ts: _, ...x }) => x));
  assert.equal(await remote.forget('list-b'), true);
  assert.equal(await remote.forget('list-b'), false);
  assert.deepEqual(counts(await remote.sessions()), { 'list-a': [3, 3] });
  await assert.rejects(remote.session(5), TypeError);
});

test('a remote guard shared with a worker thread talks to the same server', async () => {
  const remote = Guard.remote(server.url, { timeout: 30 });
  const handle = remote.share();
  assert.deepEqual(handle, { remote: server.url, token: null, timeout: 30 });
  assert.ok(Guard.attach(handle) instanceof RemoteGuard);
  const code = `
const { parentPort, workerData } = require('node:worker_threads');
const { Guard } = require('loopguard');
(async () => {
  const guard = Guard.attach(workerData.handle);
  for (let i = 0; i < 5; i++) await guard.beforeCall('from-worker', 'step', { i });
  parentPort.postMessage('done');
})().catch((e) => { throw e; });
`;
  await new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { handle } });
    w.once('message', resolve);
    w.once('error', reject);
    w.once('exit', (c) => c !== 0 && reject(new Error(`the worker exited with ${c}`)));
  });
  assert.equal((await remote.session('from-worker')).calls, 5);
});

test('an unreachable server fails open, loudly', async () => {
  const logger = recordingLogger();
  const remote = Guard.remote(`http://127.0.0.1:${await freePort()}`, { timeout: 5, logger });
  const d = await remote.beforeCall('s', 'read', { a: 1 });
  assert.equal(d.action, 'allow');
  const o = await remote.afterCall('s', 'read', { a: 1 }, { result: 'x' });
  assert.equal(o.action, 'ignored');
  const e = await remote.event({ type: 'call', tool: 'read' });
  assert.equal(e.decision, 'allow');
  assert.equal(e.failOpen, true);
  assert.equal(await remote.session('s'), null);
  assert.deepEqual(await remote.sessions(), []);
  assert.equal(await remote.forget('s'), false);
  assert.equal(logger.lines.length, 6);
  assert.match(logger.lines[0], /unreachable .*failing open: the call is allow/);
  assert.match(logger.lines[3], /unreachable .*failing open: session\("s"\) is null/);
  assert.match(logger.lines[4], /unreachable .*failing open: sessions\(\) is \[\]/);
  assert.match(logger.lines[5], /unreachable .*failing open: forget\("s"\) is false/);
});

test('Guard.remote refuses what is not an http URL', () => {
  assert.throws(() => Guard.remote('ftp://x'), TypeError);
  assert.throws(() => Guard.remote('not a url'), TypeError);
});
