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
