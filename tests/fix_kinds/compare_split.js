#!/usr/bin/env node
// A host split against its original in ONNX Runtime: the original on seeded random inputs, then
// the BPU part on the same inputs, then the host part on the frontier (the BPU part's outputs and
// the graph inputs); every original output must come out of one part, equal (max abs diff <=
// ORACLE_TOL, default 1e-4, and the same shape and dtype).
//
// Usage: node compare_split.js ORIG.onnx BPU.onnx HOST.onnx SHAPES_JSON   (SHAPES_JSON: inline
// {"input": [dims], ...}). Prints one line per output and a count of non-empty outputs; exit 0
// equal, 1 different, 2 usage or load errors. onnxruntime-node comes through NODE_PATH.
'use strict';

const ort = require('onnxruntime-node');

const TOL = process.env.ORACLE_TOL ? Number(process.env.ORACLE_TOL) : 1e-4;

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

function randomImage(shape, seed) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  const r = rng(seed);
  for (let i = 0; i < n; i++) data[i] = r();  // an image in [0, 1), as torchvision detectors take it
  return new ort.Tensor('float32', data, shape);
}

function maxAbsDiff(a, b) {
  let max = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    if (Number.isNaN(x) !== Number.isNaN(y)) return Infinity;
    if (Number.isNaN(x)) continue;
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (x !== y) return Infinity;
      continue;
    }
    max = Math.max(max, Math.abs(x - y));
  }
  return max;
}

async function main() {
  const [origPath, bpuPath, hostPath, shapesArg] = process.argv.slice(2);
  if (!shapesArg) {
    console.error('usage: node compare_split.js ORIG.onnx BPU.onnx HOST.onnx SHAPES_JSON');
    return 2;
  }
  const shapes = JSON.parse(shapesArg);
  const opts = { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1,
                 executionProviders: ['cpu'], logSeverityLevel: 3 };
  const orig = await ort.InferenceSession.create(origPath, opts);
  const bpu = await ort.InferenceSession.create(bpuPath, opts);
  const host = await ort.InferenceSession.create(hostPath, opts);
  const feeds = {};
  let seed = 20261206;
  for (const name of orig.inputNames) feeds[name] = randomImage(shapes[name], seed++);
  const want = await orig.run(feeds);
  const bpuFeeds = {};
  for (const name of bpu.inputNames) bpuFeeds[name] = feeds[name];
  const head = await bpu.run(bpuFeeds);
  const hostFeeds = {};
  for (const name of host.inputNames) {
    if (name in head) hostFeeds[name] = head[name];
    else if (name in feeds) hostFeeds[name] = feeds[name];
    else {
      console.log(`FAIL: host input '${name}' is neither a BPU-part output nor a graph input`);
      return 1;
    }
  }
  const tail = await host.run(hostFeeds);
  let failed = false;
  let nonEmpty = 0;
  for (const name of orig.outputNames) {
    const a = want[name];
    const b = name in tail ? tail[name] : head[name];
    if (b === undefined) {
      console.log(`FAIL ${name}: an output of neither part`);
      failed = true;
      continue;
    }
    if (a.type !== b.type || a.dims.join('x') !== b.dims.join('x')) {
      console.log(`FAIL ${name}: ${a.type}[${a.dims}] vs ${b.type}[${b.dims}]`);
      failed = true;
      continue;
    }
    const d = maxAbsDiff(a.data, b.data);
    nonEmpty += a.data.length > 0 ? 1 : 0;
    const ok = d <= TOL;
    failed = failed || !ok;
    console.log(`${ok ? 'ok' : 'FAIL'} ${name} (${name in tail ? 'host' : 'bpu'} part) [${a.dims}] max abs diff ${d}`);
  }
  console.log(`${nonEmpty} of ${orig.outputNames.length} outputs non-empty`);
  return failed ? 1 : 0;
}

main().then((code) => process.exit(code), (e) => {
  console.error(`compare_split.js: ${e.message}`);
  process.exit(2);
});
