#!/usr/bin/env node
// Validates bpu-lint JSON reports against docs/report.schema.json with ajv's
// JSON Schema 2020-12 validator (strict mode: the schema itself must be clean).
// Usage: node validate.js SCHEMA FILE...   (NODE_PATH at the node_modules of package.json)
// Prints one line per file, then "N passed, M failed".
'use strict';

const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

const [schemaPath, ...files] = process.argv.slice(2);
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
addFormats(ajv);
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));

let passed = 0;
let failed = 0;
for (const file of files) {
  let report;
  try {
    report = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    console.log(`FAIL ${file}: not JSON: ${e.message}`);
    failed++;
    continue;
  }
  if (validate(report)) {
    console.log(`ok   ${file}`);
    passed++;
  } else {
    console.log(`FAIL ${file}`);
    for (const err of validate.errors.slice(0, 10)) {
      console.log(`  ${err.instancePath || '/'}: ${err.message} ${JSON.stringify(err.params)}`);
    }
    failed++;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
