// bpu-lint calibrate: from (model, compile log) pairs of one platform, one
// user rule file (`extends: <platform>`) that makes compare agree on every
// pair, and what no fact explains.
//
//  - Op classes: an op whose matched nodes all ran on one side, and that a
//    prediction got wrong, gets an `ops:` entry (cpu or bpu).
//  - Conditional rules: an op whose nodes ran on both sides gets a
//    cpu_fallback rule whose `require` holds on exactly its BPU nodes: the
//    simplest condition found, one fact before two (ranks, dtypes,
//    constness, producers, dims, attributes: what the stubs list).
//  - A database rule that put BPU nodes on the CPU is declared again (same
//    id, so it replaces the database's) with a `when` that leaves them out,
//    found the same way.
//  - Leftovers: nodes no such condition explains, listed in the file.
// Each entry's source names the logs, their lines and the toolchain
// versions; its status is verified (for that release). The file depends
// only on the pairs and the database: the same input gives the same bytes.
#pragma once

#include <string>
#include <vector>

#include "bpulint/compare/compare.h"
#include "bpulint/compare/compile_log.h"
#include "bpulint/lint/lint.h"

namespace bpulint {

struct CalibrationPair {
  std::string model;  // paths as the user gave them
  std::string log;
  const ModelReport* report = nullptr;
  const CompileLog* compile_log = nullptr;
  const Comparison* comparison = nullptr;
};

struct Calibration {
  std::string yaml;                     // the rule file
  std::vector<std::string> op_classes;  // "Sqrt: cpu"
  std::vector<std::string> rules;       // ids of the new rules
  std::vector<std::string> overrides;   // ids of database rules declared again
  std::vector<std::string> leftovers;   // one line per node no condition explains
};

// `command` is quoted in the file's first comment line.
Calibration calibrate(const Platform& platform, const std::vector<CalibrationPair>& pairs, const std::string& command);

}  // namespace bpulint
