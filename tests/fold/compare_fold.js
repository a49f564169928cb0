#!/usr/bin/env node
// Holds bpu-lint's folded values (fold_dump's JSON lines on stdin) against
// ONNX Runtime running the same case models (their graphs have no inputs:
// ONNX Runtime computes every output from the initializers with its kernels,
// graph optimizations off).
//
// Usage: fold_dump CASES_DIR | node compare_fold.js CASES_DIR
// Prints one FAIL line per mismatch (dtype, dims, a value; or an output
// bpu-lint did not fold) and ends with "N passed, M failed". Cases named
// refuse_* hold results the runtimes leave undefined (a division by zero, an
// out-of-range cast): there the check is that bpu-lint folds nothing.
// Integers must be equal; floats within 2 ulps of float32 (or 1e-12 relative
// for double), since libm's exp/log/pow may differ in the last bit; a
// reduction's within 32 (its order of operations is the runtime's own).
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const DTYPES = { 1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64', 9: 'bool',
  11: 'float64', 12: 'uint32' };

// A reduction's float result depends on the order of its additions or
// products (ONNX Runtime's are vectorised): within 32 ulps there.
function closeEnough(a, b, dtype, reduction) {
  if (Number.isNaN(a) || Number.isNaN(b)) return false;
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  const rel = (dtype === 'float64' ? 1e-12 : 2.4e-7) * (reduction ? 16 : 1);
  return Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b), 1e-30);
}

async function main() {
  const dir = process.argv[2];
  const lines = fs.readFileSync(0, 'utf8').split('\n').filter((l) => l.trim());
  let passed = 0, failed = 0, skipped = 0;
  for (const line of lines) {
    const c = JSON.parse(line);
    const fail = (why) => { console.log(`FAIL ${c.case}: ${why}`); failed++; };
    if (c.error !== undefined) { fail(`bpu-lint could not read the case: ${c.error}`); continue; }
    if (c.case.startsWith('refuse_')) {  // undefined results: folding them would be a guess
      const folded = c.outputs.filter((o) => o.folded).map((o) => o.name);
      if (folded.length) fail(`folded ${folded.join(', ')}, whose value is undefined`);
      else passed++;
      continue;
    }
    let session;
    let result;
    try {
      session = await ort.InferenceSession.create(path.join(dir, `${c.case}.onnx`), { graphOptimizationLevel: 'disabled' });
      result = await session.run({});
    } catch (e) {
      // A case ONNX Runtime cannot run (no kernel for the op on that dtype) proves nothing either way.
      console.log(`SKIP ${c.case}: ONNX Runtime: ${String(e.message).split('\n')[0]}`);
      skipped++;
      continue;
    }
    const problems = [];
    for (const o of c.outputs) {
      const want = result[o.name];
      if (!want) { problems.push(`${o.name}: ONNX Runtime has no such output`); continue; }
      if (!o.folded) { problems.push(`${o.name}: not folded`); continue; }
      const dtype = DTYPES[o.dtype];
      if (dtype !== want.type) { problems.push(`${o.name}: dtype ${dtype}, ONNX Runtime ${want.type}`); continue; }
      if (JSON.stringify(o.dims) !== JSON.stringify(want.dims.map(Number))) {
        problems.push(`${o.name}: dims [${o.dims}], ONNX Runtime [${want.dims}]`);
        continue;
      }
      const data = Array.from(want.data);
      if (data.length !== o.values.length) { problems.push(`${o.name}: ${o.values.length} values, ONNX Runtime ${data.length}`); continue; }
      for (let i = 0; i < data.length; i++) {
        const real = dtype === 'float32' || dtype === 'float64';
        const ok = real ? closeEnough(Number(o.values[i]), data[i], dtype, /^(Reduce|chain_weight_scale)/.test(c.case))
                        : BigInt(o.values[i]) === BigInt(typeof data[i] === 'boolean' ? Number(data[i]) : data[i]);
        if (!ok) { problems.push(`${o.name}[${i}]: ${o.values[i]}, ONNX Runtime ${data[i]}`); break; }
      }
    }
    if (c.outputs.length === 0) problems.push('no graph output was found in the facts');
    if (problems.length) fail(problems.join('; '));
    else passed++;
  }
  console.log(`${skipped} skipped (ONNX Runtime has no kernel)`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

main().catch((e) => { console.error(`compare_fold.js: ${e.stack || e}`); console.log('0 passed, 1 failed'); process.exit(2); });
