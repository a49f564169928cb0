#!/usr/bin/env node
// Runs two ONNX models with ONNX Runtime on identical seeded random inputs and compares every
// graph output of the first by name.
//
// Usage: node compare.js ORIG.onnx FIXED.onnx SHAPES_JSON
//   SHAPES_JSON: a file path, or inline JSON (starting with '[' or '{'): one shape set or a list
//   of them; a shape set maps each input name of ORIG to its concrete shape, either
//   [1, 8, 2, 3, 3] or {"shape": [...], "dtype": "float32"}. The models run once per set.
// Prints one line per output per shape set with the max abs diff and the relative error (max abs
// diff over the original output's largest magnitude); exits 0 when every diff is <= TOL (1e-4, or
// env ORACLE_TOL) and every relative error <= REL_TOL (1e-5, or env ORACLE_REL_TOL), 1 on any
// larger one / shape or dtype mismatch / missing output / non-finite mismatch, 2 on usage or load
// errors.
// onnxruntime-node is resolved through NODE_PATH (run_oracle.sh sets it).
'use strict';

const fs = require('fs');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error(`compare.js: cannot load onnxruntime-node (set NODE_PATH to its node_modules): ${e.message}`);
  process.exit(2);
}

const TOL = process.env.ORACLE_TOL ? Number(process.env.ORACLE_TOL) : 1e-4;
const REL_TOL = process.env.ORACLE_REL_TOL ? Number(process.env.ORACLE_REL_TOL) : 1e-5;
const OPT_LEVEL = process.env.ORACLE_ORT_OPT || 'disabled'; // disabled | basic | extended | all
const SEED = 20260629;

// mulberry32: small deterministic PRNG, so both models see bit-identical inputs on every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function seedFor(setIndex, name) {
  let h = (SEED ^ Math.imul(setIndex + 1, 0x9E3779B1)) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const CTORS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array,
};

function randomTensor(dtype, shape, seed) {
  const n = shape.reduce((a, b) => a * b, 1);
  const Ctor = CTORS[dtype];
  if (!Ctor) throw new Error(`unsupported input dtype ${dtype}`);
  const data = new Ctor(n);
  const r = rng(seed);
  for (let i = 0; i < n; i++) {
    const u = r();
    if (dtype === 'float32' || dtype === 'float64') data[i] = u * 2 - 1;
    else if (dtype === 'bool') data[i] = u < 0.5 ? 0 : 1;
    else if (dtype === 'int64' || dtype === 'uint64') data[i] = BigInt(Math.floor(u * 8));
    else data[i] = Math.floor(u * 8);
  }
  return new ort.Tensor(dtype, data, shape);
}

function parseShapes(arg) {
  const text = /^\s*[[{]/.test(arg) ? arg : fs.readFileSync(arg, 'utf8');
  const parsed = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}

function metaType(session, name) {
  const meta = session.inputMetadata;
  if (!meta) return undefined;
  const list = Array.isArray(meta) ? meta : Object.values(meta);
  const m = list.find((v) => v && v.name === name);
  return m && m.isTensor ? m.type : undefined;
}

// The largest finite magnitude of a tensor's values (0 when none is finite and non-zero).
function maxAbs(a) {
  let max = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Math.abs(Number(a[i]));
    if (Number.isFinite(x) && x > max) max = x;
  }
  return max;
}

function maxAbsDiff(a, b) {
  // Returns [max abs diff, problem or null]; NaN/Inf must match exactly in position and value.
  let max = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (!(Number.isNaN(x) && Number.isNaN(y))) return [Infinity, `NaN mismatch at flat index ${i}`];
      continue;
    }
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (x !== y) return [Infinity, `Inf mismatch at flat index ${i} (${x} vs ${y})`];
      continue;
    }
    const d = Math.abs(x - y);
    if (d > max) max = d;
  }
  return [max, null];
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 3) {
    console.error('usage: node compare.js ORIG.onnx FIXED.onnx SHAPES_JSON');
    return 2;
  }
  const [origPath, fixedPath, shapesArg] = args;
  let shapeSets;
  try {
    shapeSets = parseShapes(shapesArg);
  } catch (e) {
    console.error(`compare.js: bad SHAPES_JSON: ${e.message}`);
    return 2;
  }
  const opts = {
    graphOptimizationLevel: OPT_LEVEL, intraOpNumThreads: 1, interOpNumThreads: 1,
    executionProviders: ['cpu'], logSeverityLevel: 3,
  };
  let orig;
  let fixed;
  try {
    orig = await ort.InferenceSession.create(origPath, opts);
  } catch (e) {
    console.error(`compare.js: ORT cannot load ${origPath}: ${e.message}`);
    return 2;
  }
  try {
    fixed = await ort.InferenceSession.create(fixedPath, opts);
  } catch (e) {
    console.log(`FAIL: ORT cannot load the fixed model ${fixedPath}: ${e.message}`);
    return 1;
  }

  let failed = false;
  const fail = (msg) => { failed = true; console.log(`FAIL: ${msg}`); };

  const fixedInputs = new Set(fixed.inputNames);
  for (const name of orig.inputNames) {
    if (!fixedInputs.has(name)) fail(`input '${name}' of the original is not an input of the fixed model`);
  }
  for (const name of fixed.inputNames) {
    if (!orig.inputNames.includes(name)) fail(`fixed model has an extra input '${name}'`);
  }
  const fixedOutputs = new Set(fixed.outputNames);
  for (const name of orig.outputNames) {
    if (!fixedOutputs.has(name)) fail(`output '${name}' is missing from the fixed model`);
  }
  if (failed) return 1;

  for (let s = 0; s < shapeSets.length; s++) {
    const set = shapeSets[s];
    const feeds = {};
    const desc = [];
    for (const name of orig.inputNames) {
      if (!(name in set)) {
        console.error(`compare.js: shape set ${s} has no shape for input '${name}'`);
        return 2;
      }
      const spec = set[name];
      const shape = Array.isArray(spec) ? spec : spec.shape;
      const dtype = (!Array.isArray(spec) && spec.dtype) || metaType(orig, name) || 'float32';
      feeds[name] = randomTensor(dtype, shape, seedFor(s, name));
      desc.push(`${name}=${shape.join('x')}`);
    }
    let a;
    let b;
    try {
      a = await orig.run(feeds);
    } catch (e) {
      console.error(`compare.js: ORT failed to run the original on ${desc.join(',')}: ${e.message}`);
      return 2;
    }
    try {
      b = await fixed.run(feeds);
    } catch (e) {
      fail(`ORT failed to run the fixed model on ${desc.join(',')}: ${e.message}`);
      continue;
    }
    for (const name of orig.outputNames) {
      const ta = a[name];
      const tb = b[name];
      const where = `[${desc.join(',')}] ${name}`;
      if (ta.type !== tb.type) { fail(`${where}: dtype ${ta.type} vs ${tb.type}`); continue; }
      if (ta.dims.join('x') !== tb.dims.join('x')) {
        fail(`${where}: shape [${ta.dims}] vs [${tb.dims}]`);
        continue;
      }
      const [d, problem] = maxAbsDiff(ta.data, tb.data);
      if (problem) { fail(`${where}: ${problem}`); continue; }
      const scale = maxAbs(ta.data);
      const rel = scale > 0 ? d / scale : (d === 0 ? 0 : Infinity);
      const ok = d <= TOL && rel <= REL_TOL;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${where} shape [${ta.dims}] max_abs_diff ${d.toExponential(3)} ` +
                  `rel_err ${rel.toExponential(3)}`);
      if (!ok) failed = true;
    }
  }
  return failed ? 1 : 0;
}

main().then((code) => process.exit(code), (e) => {
  console.error(`compare.js: ${e && e.stack ? e.stack : e}`);
  process.exit(2);
});
