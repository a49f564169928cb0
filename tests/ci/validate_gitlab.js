#!/usr/bin/env node
// Validates GitLab Code Quality reports against tests/ci/gitlab-codequality.schema.json (ajv,
// draft-07, strict) and checks what a schema cannot: fingerprints unique within a report
// (GitLab keeps one issue per fingerprint).
// Usage: node validate_gitlab.js SCHEMA FILE...   Prints one line per file, then "N passed, M failed".
'use strict';

const fs = require('fs');
const Ajv = require('ajv');

const [schemaPath, ...files] = process.argv.slice(2);
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
let passed = 0;
let failed = 0;
for (const file of files) {
  const problems = [];
  let report;
  try {
    report = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    problems.push(`not JSON: ${e.message}`);
  }
  if (report !== undefined) {
    if (!validate(report)) {
      for (const err of validate.errors.slice(0, 10)) problems.push(`${err.instancePath || '/'}: ${err.message}`);
    } else {
      const seen = new Set();
      for (const issue of report) {
        if (seen.has(issue.fingerprint)) problems.push(`fingerprint ${issue.fingerprint} repeated`);
        seen.add(issue.fingerprint);
      }
    }
  }
  if (problems.length === 0) {
    console.log(`ok   ${file}`);
    passed++;
  } else {
    console.log(`FAIL ${file}`);
    for (const p of problems) console.log(`  ${p}`);
    failed++;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
