// A rule stub for a node bpu-lint placed on the BPU but the compiler ran on
// the CPU: a user rule file (`extends: <platform>`, the rule-file format of
// rules/*.yaml) that a team completes and loads with --rules to calibrate
// the database for its own toolchain release.
#pragma once

#include <string>
#include <vector>

#include "bpulint/compare/compile_log.h"
#include "bpulint/engine/facts.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

// A node's facts as short lines: "op: Softmax (opset 13)", "axis: 1",
// "input[0]: float32 [1, 16, 4, 1024]", "output[0]: ...".
std::vector<std::string> readable_facts(const NodeFacts& node, const Platform& platform);

// A data type named by a reason line ("... does not support data type: int16"),
// spelled as rules spell dtypes (int16, float32); "" when it names none.
std::string reason_dtype(const std::string& reason);

// Pieces of rule files written for the user (stubs, calibrate's file):
// a YAML double-quoted scalar holding `s` exactly; "GlobalAveragePool" ->
// "global-average-pool"; an op type as a YAML flow item; the log's tool
// versions and march ("hb_mapper 1.18.2, march bernoulli2"; "" for none);
// text from a model or a log inside a YAML comment (one line, valid UTF-8).
std::string comment_text(const std::string& s);
std::string yaml_quote(const std::string& s);
std::string kebab(const std::string& s);
std::string op_item(const std::string& op);
std::string versions_text(const CompileLog* log);

struct StubInput {
  const NodeFacts* node = nullptr;
  const Platform* platform = nullptr;
  int number = 1;               // the stub's rule id is CMP<number, 4 digits>
  std::string model;            // paths as the user gave them
  std::string log;
  const CompileLog* compile_log = nullptr;  // for its versions and march
  size_t row_line = 0;          // the node's row
  const NodeReason* reason = nullptr;       // the log's reason line, if any
};

// When the reason names a data type the stub requires another one at the
// named input (and says whether that condition fails on this node as
// exported); otherwise `require: "FILL_IN"` is a placeholder that the loader
// refuses until it is replaced. Every other key is filled in and valid.
std::string rule_stub(const StubInput& in);

}  // namespace bpulint
