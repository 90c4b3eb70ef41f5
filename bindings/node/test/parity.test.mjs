// Every parity fixture through guard.event(object): the decisions OpenClaw's own code gives.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { Guard } from 'loopguard';
import { PARITY, parityCases, readJsonl } from './helpers.mjs';

const cases = parityCases();

test('the parity fixtures are there', () => {
  assert.ok(cases.length >= 15, `expected at least 15 parity cases in ${PARITY}, found ${cases.length}`);
});

for (const name of cases) {
  test(`parity: ${name} (event objects)`, () => {
    const guard = new Guard({ config: path.join(PARITY, `${name}.config.json`) });
    const events = readJsonl(path.join(PARITY, `${name}.events.jsonl`));
    const expected = readJsonl(path.join(PARITY, `${name}.expected.jsonl`)).map((l) => JSON.parse(l));
    assert.equal(events.length, expected.length);
    events.forEach((line, i) => {
      // The object JavaScript has for the line (JSON.parse: doubles, last duplicate key wins,
      // lone surrogates kept): what an OpenClaw plugin would hold.
      const got = guard.event(JSON.parse(line));
      const { line: _line, ...want } = expected[i];
      assert.deepEqual(got, want, `${name} event ${i + 1}: ${line}`);
    });
  });

  test(`parity: ${name} (JSON lines)`, () => {
    const guard = new Guard({ config: path.join(PARITY, `${name}.config.json`) });
    const events = readJsonl(path.join(PARITY, `${name}.events.jsonl`));
    const expected = readJsonl(path.join(PARITY, `${name}.expected.jsonl`)).map((l) => JSON.parse(l));
    events.forEach((line, i) => {
      const { line: _line, ...want } = expected[i];
      assert.deepEqual(guard.event(line), want, `${name} event ${i + 1}`);
    });
  });
}

// What each decision of an enforcing guard tells the agent to do (docs/events.md, "Output:
// decisions"): the `effect` the methods' objects carry. The parity fixtures run the openclaw
// profile, whose only `abort` is the post-compaction guard's.
const EFFECTS = {
  allow: 'proceed',
  'warn:true': 'notice',
  'warn:false': 'proceed',
  block: 'refuse',
  recorded: 'proceed',
  ignored: 'proceed',
  abort: 'end_run',
  armed: 'proceed',
};

// The same fixtures through the methods an agent calls. beforeCall and afterCall lines are
// decided from digests taken straight from their JSON text where the addon can
// (crates/loopguard-guard/src/digested.rs), and from the parsed line otherwise: the decisions
// must be OpenClaw's either way. The method's object is the record with `decision` as `action`.
for (const name of cases) {
  test(`parity: ${name} (beforeCall, afterCall, onCompaction)`, () => {
    const guard = new Guard({ config: path.join(PARITY, `${name}.config.json`) });
    const events = readJsonl(path.join(PARITY, `${name}.events.jsonl`)).map((l) => JSON.parse(l));
    const expected = readJsonl(path.join(PARITY, `${name}.expected.jsonl`)).map((l) => JSON.parse(l));
    assert.equal(events.length, expected.length);
    events.forEach((ev, i) => {
      const known = new Set(['type', 'session', 'agent', 'callId', 'run', 'tool', 'args', 'result', 'error']);
      for (const k of Object.keys(ev)) assert.ok(known.has(k), `${name} event ${i + 1}: the methods cannot pass ${k}`);
      const session = ev.session ?? 'default';
      const opts = { run: ev.run, callId: ev.callId, agent: ev.agent };
      let got;
      if (ev.type === 'call') got = guard.beforeCall(session, ev.tool, ev.args ?? {}, opts);
      else if (ev.type === 'outcome') {
        const outcome = 'error' in ev ? { ...opts, error: ev.error } : { ...opts, result: ev.result };
        got = guard.afterCall(session, ev.tool, ev.args ?? {}, outcome);
      } else got = guard.onCompaction(session, { run: ev.run, agent: ev.agent });
      const { line: _line, decision, ...rest } = expected[i];
      const effect = EFFECTS[decision === 'warn' ? `warn:${rest.emitted}` : decision];
      assert.deepEqual(got, { action: decision, effect, ...rest }, `${name} event ${i + 1}: ${JSON.stringify(ev)}`);
    });
  });
}
