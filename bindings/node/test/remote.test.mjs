// Guard.remote against a real `loopguard serve` started here: the same decisions as a local
// Guard for the same calls; failing open, with a warning, when the server cannot be reached.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Guard, EventError } from 'loopguard';
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
  assert.equal(logger.lines.length, 3);
  assert.match(logger.lines[0], /unreachable .*failing open: the call is allow/);
});

test('Guard.remote refuses what is not an http URL', () => {
  assert.throws(() => Guard.remote('ftp://x'), TypeError);
  assert.throws(() => Guard.remote('not a url'), TypeError);
});
