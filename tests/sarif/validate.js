#!/usr/bin/env node
// Validates SARIF files written by bpu-lint:
//   1. JSON schema: ajv + ajv-draft-04 against the OASIS SARIF 2.1.0 rtm.5
//      schema shipped by @microsoft/jest-sarif (unicodeRegExp must be off:
//      one of the schema's patterns does not compile as a unicode regex);
//   2. by hand, what rtm.5 does not enforce: every region has byteOffset,
//      startLine or charOffset (errata01), and no `fixes` / `artifactChanges`
//      array is empty (GitHub rejects those);
//   3. the SARIF Multitool (`validate --rule-kind "Sarif;Gh"`), which always
//      exits 0: its own SARIF output is read; "error" results fail the file,
//      SARIF2006 (URI not reachable, always fires offline) is ignored, other
//      findings are printed as warnings.
// Usage: node validate.js FILE...   (run from a folder where the packages of
// package.json are installed, or with NODE_PATH pointing at its node_modules)
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const Ajv04 = require('ajv-draft-04');
const addFormats = require('ajv-formats');
const schema = require('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json');

const ajv = new Ajv04({ allErrors: true, strict: false, unicodeRegExp: false });
addFormats(ajv);
const validateSchema = ajv.compile(schema);

function findMultitool() {
  const pkg = path.dirname(require.resolve('@microsoft/sarif-multitool-linux/package.json'));
  const stack = [pkg];
  while (stack.length > 0) {
    const dir = stack.pop();
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) stack.push(p);
      else if (entry.name === 'Sarif.Multitool') return p;
    }
  }
  throw new Error(`no Sarif.Multitool binary under ${pkg}`);
}

const multitool = findMultitool();
fs.chmodSync(multitool, 0o755);  // npm install --ignore-scripts skips the package's own chmod

function handChecks(log) {
  const problems = [];
  const walk = (v, where) => {
    if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${where}[${i}]`));
      return;
    }
    if (v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      const here = `${where}/${k}`;
      if (k === 'region' || k === 'deletedRegion' || k === 'contextRegion') {
        if (x === null || typeof x !== 'object' ||
            !('byteOffset' in x || 'startLine' in x || 'charOffset' in x)) {
          problems.push(`${here}: a region needs byteOffset, startLine or charOffset`);
        }
      }
      if ((k === 'fixes' || k === 'artifactChanges' || k === 'replacements') && where.indexOf('/properties') < 0) {
        if (!Array.isArray(x) || x.length === 0) problems.push(`${here}: must be a non-empty array`);
      }
      walk(x, here);
    }
  };
  walk(log, '');
  return problems;
}

function runMultitool(file) {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bpulint-sarif-')), 'validation.sarif');
  try {
    execFileSync(multitool, ['validate', file, '-o', out, '--log', 'ForceOverwrite', '--rule-kind', 'Sarif;Gh'],
                 { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: '1' } });
  } catch (e) {
    // It exits 0 even on findings; a non-zero exit is a crash. Fall through
    // to reading OUT, which tells whether it produced anything.
  }
  if (!fs.existsSync(out)) return { errors: [`Sarif.Multitool wrote no output for ${file}`], warnings: [] };
  const log = JSON.parse(fs.readFileSync(out, 'utf8'));
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
  const errors = [], warnings = [];
  for (const run of log.runs || []) {
    for (const n of (run.invocations || []).flatMap(i => i.toolExecutionNotifications || [])) {
      if (n.level === 'error') errors.push(`multitool: ${n.message && n.message.text}`);
    }
    for (const r of run.results || []) {
      if (r.ruleId === 'SARIF2006') continue;
      const text = `${r.ruleId} ${r.level || 'warning'}: ${(r.message && (r.message.text || (r.message.arguments || []).join(' | '))) || ''}`;
      if (r.level === 'error') errors.push(text);
      else warnings.push(text);
    }
  }
  return { errors, warnings };
}

let passed = 0, failed = 0;
for (const file of process.argv.slice(2)) {
  const errors = [];
  let warnings = [];
  let log = null;
  try {
    log = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    errors.push(`not JSON: ${e.message}`);
  }
  if (log !== null) {
    if (!validateSchema(log)) {
      for (const e of validateSchema.errors) errors.push(`schema: ${e.instancePath || '/'} ${e.message}`);
    }
    errors.push(...handChecks(log));
    const mt = runMultitool(path.resolve(file));
    errors.push(...mt.errors);
    warnings = mt.warnings;
  }
  if (errors.length === 0) {
    ++passed;
    console.log(`PASS ${file}${warnings.length ? ` (${warnings.length} multitool warning${warnings.length === 1 ? '' : 's'})` : ''}`);
  } else {
    ++failed;
    console.log(`FAIL ${file}`);
    for (const e of errors) console.log(`  error: ${e}`);
  }
  for (const w of warnings) console.log(`  warning: ${w}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
