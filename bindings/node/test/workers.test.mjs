// Worker threads sharing one Guard (guard.share() / Guard.attach) lose no update: every call and
// outcome of every thread is counted once, and the detectors see the threads' calls together.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { Guard } from 'loopguard';

const THREADS = 4;
const CALLS = 60;

const worker = `
const { parentPort, workerData } = require('node:worker_threads');
const { Guard } = require('loopguard');
const guard = Guard.attach(workerData.handle);
let warned = 0;
for (let i = 0; i < workerData.calls; i++) {
  const args = { worker: workerData.id, i };
  const d = guard.beforeCall('shared', 'step', args);
  if (d.action !== 'allow') warned++;
  guard.afterCall('shared', 'step', args, { result: { ok: i } });
}
parentPort.postMessage({ warned });
`;

test('one guard shared by worker threads loses no update', async () => {
  const guard = new Guard();
  const handle = guard.share();
  const results = await Promise.all(
    Array.from({ length: THREADS }, (_, id) =>
      new Promise((resolve, reject) => {
        const w = new Worker(worker, { eval: true, workerData: { handle, id, calls: CALLS } });
        w.once('message', resolve);
        w.once('error', reject);
        w.once('exit', (code) => code !== 0 && reject(new Error(`worker ${id} exited with ${code}`)));
      }),
    ),
  );
  assert.deepEqual(results.map((r) => r.warned), Array(THREADS).fill(0));
  const stats = guard.session('shared');
  assert.equal(stats.calls, THREADS * CALLS);
  assert.equal(stats.outcomes, THREADS * CALLS);
});

test('identical calls from several threads add up to one loop', async () => {
  const guard = new Guard();
  const handle = guard.share();
  const code = `
const { parentPort, workerData } = require('node:worker_threads');
const { Guard } = require('loopguard');
const guard = Guard.attach(workerData.handle);
for (let i = 0; i < 5; i++) {
  const d = guard.beforeCall('loop', 'read', { path: '/same' });
  if (d.action !== 'block') guard.afterCall('loop', 'read', { path: '/same' }, { result: 'same' });
}
parentPort.postMessage('done');
`;
  await Promise.all(
    Array.from({ length: THREADS }, () =>
      new Promise((resolve, reject) => {
        const w = new Worker(code, { eval: true, workerData: { handle } });
        w.once('message', resolve);
        w.once('error', reject);
      }),
    ),
  );
  // 20 identical calls with identical outcomes recorded: the next one is blocked.
  assert.equal(guard.session('loop').calls, THREADS * 5);
  assert.equal(guard.beforeCall('loop', 'read', { path: '/same' }).action, 'block');
});

test('attach refuses a handle that was never shared', () => {
  assert.throws(() => Guard.attach(987654), /no guard with handle 987654/);
});
