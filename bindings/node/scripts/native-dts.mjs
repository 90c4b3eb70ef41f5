// Writes native.d.ts, the TypeScript declarations of the addon (the `NativeGuard` class and the
// `decide` function that lib/ calls), from the type definitions napi-rs's macros emit while the
// crate compiles (NAPI_TYPE_DEF_TMP_FOLDER, set by scripts/build-node.sh): one JSON object per
// line, `kind` "struct" / "impl" / "fn" with the TypeScript text in `def`. The file is generated:
// edit src/lib.rs, not it. bindings/node/test/types.test.mjs checks it against the addon.
//
//   node native-dts.mjs TYPEDEF_FILE OUT_FILE
import fs from 'node:fs';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node native-dts.mjs TYPEDEF_FILE OUT_FILE');
  process.exit(2);
}
const lines = fs.readFileSync(input, 'utf8').split('\n').filter((l) => l.trim() !== '');
const items = lines.map((l, i) => {
  try {
    return JSON.parse(l);
  } catch (e) {
    throw new Error(`${input}:${i + 1}: not a napi-rs type definition: ${e.message}`);
  }
});
const indent = (text) =>
  text
    .split('\n')
    .map((l) => l.trimStart())
    .map((l) => (l === '' ? '' : l.startsWith('*') ? `   ${l}` : `  ${l}`))
    .join('\n');
const doc = (d) => (d ? d.trimEnd() + '\n' : '');

const out = [
  '// The addon\'s declarations, generated from src/lib.rs by scripts/build-node.sh',
  '// (bindings/node/scripts/native-dts.mjs): do not edit. The API is index.d.ts.',
  '',
  '/** A native value JavaScript holds but cannot look into. */',
  'export declare class ExternalObject<T> {',
  '  readonly __external: T;',
  '  private constructor();',
  '}',
  '',
];
const classes = items.filter((i) => i.kind === 'struct');
for (const c of classes) {
  const body = items
    .filter((i) => i.kind === 'impl' && i.name === c.name)
    .map((i) => indent(i.def))
    .join('\n');
  out.push(`${doc(c.js_doc)}export declare class ${c.name} {`, body, '}', '');
}
for (const f of items.filter((i) => i.kind === 'fn')) {
  out.push(`${doc(f.js_doc)}export declare ${f.def}`, '');
}
const unknown = items.filter((i) => !['struct', 'impl', 'fn'].includes(i.kind));
if (unknown.length > 0) {
  throw new Error(`${input}: kinds this script does not write: ${unknown.map((i) => `${i.kind} ${i.name}`).join(', ')}`);
}
fs.writeFileSync(output, out.join('\n'));
