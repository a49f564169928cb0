// The rule database: platforms, their op placement classes and their rules,
// loaded strictly from YAML (unknown keys, bad expressions and duplicate ids
// are errors with file:line:column).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bpulint/rules/expr.h"
#include "bpulint/rules/severity.h"

namespace bpulint {

// The platform used when neither the command line nor a configuration names one.
constexpr const char* kDefaultPlatform = "j6p";

// How sure we are of a rule's numbers. "derived" = published for another chip.
enum class Status { Verified, Derived, Inferred };
const char* status_name(Status s);

// What failing a rule means for the node (the `effect:` of a rule file).
enum class Effect { CpuFallback, CompileError, PerfWarning, Advice };
const char* effect_name(Effect e);  // cpu_fallback | compile_error | perf_warning | advice
bool parse_effect(const std::string& text, Effect* out);

// Where the toolchain puts an op on this platform before any rule is checked.
// Lowered ops become another op (Gemm -> Conv) and run where that op runs;
// Unknown records that nobody knows yet (reported as "cannot verify").
enum class OpClass { Bpu, Folded, Cpu, Lowered, Unknown };
const char* op_class_name(OpClass c);

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based
  int column = 0;  // 1-based
  std::string str() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column); }
};

enum class RuleScope { Node, Model };

struct Rule {
  std::string id;            // stable, opaque: BPU1101
  std::string name;          // kebab-case summary: convtranspose3d-kernel-d-range
  std::string summary;       // one sentence, shown by `rules` and SARIF shortDescription
  std::string description;   // rationale: why the constraint exists
  RuleScope scope = RuleScope::Node;
  std::vector<std::string> ops;  // op types; "*" = every node
  std::string domain;            // "" = default ONNX domain
  ExprPtr when;                  // optional applicability condition
  ExprPtr require;               // the constraint
  TemplatePtr message;           // filled with the node's facts
  std::string message_text;      // the template as written (calibrate re-emits a rule it overrides)
  Severity severity = Severity::Error;
  Effect effect = Effect::CpuFallback;
  std::string cpu_node;          // what the toolchain emits on fallback, e.g. hbtl_call_native_Conv
  // `resolved_by: config_on_bpu`: the finding is the toolchain's default, and a
  // compile config putting the node on the BPU (node_info ON BPU, run_on_bpu) settles it.
  bool resolved_by_config_on_bpu = false;
  std::string source;
  Status status = Status::Verified;
  std::string ref;               // row in the reference constraint table, e.g. J6-T10a
  std::vector<std::string> fixes;
  std::vector<std::string> facts_used;  // root facts its expressions read (sorted), to build only those
  SourceLocation defined_at;
  bool builtin = false;          // raised by the engine itself, not by an expression
};

struct OpPlacement {
  OpClass op_class = OpClass::Bpu;
  std::string lowered_to;  // for Lowered: the op it becomes
  Status status = Status::Verified;
  std::string source;
  std::string note;
};

// A rule a sibling chip has and this one lacks: the limit is known there and
// unknown here, so a node it applies to is reported "cannot verify" with the
// sibling's limit as the hint, never passed silently.
struct SiblingRule {
  Rule rule;                           // the sibling's rule, as it is defined there
  std::vector<std::string> platforms;  // the siblings that have it
};

struct Platform {
  std::string name;                  // j6p
  std::string march;                 // nash-p
  std::string family;                // chips whose limits are siblings' (nash); "" = none
  std::vector<std::string> aliases;  // nash-p, J6P, ...
  std::string description;
  std::string file;
  std::vector<Rule> rules;
  std::map<std::string, OpPlacement> ops;  // default-domain op type -> class
  std::vector<SiblingRule> sibling_rules;  // node rules of same-family chips this one lacks (by id and ref)

  // The class an op finally has: a lowered op takes its target's (Bpu if the
  // target is unclassified would be a guess, so Unknown).
  OpClass effective_class(const std::string& op) const;
};

struct RuleDatabase {
  std::vector<Platform> platforms;  // sorted by name
  const Platform* find(const std::string& name_or_alias) const;
};

// A named YAML document: its path (for messages) and its text.
struct RuleFile {
  std::string path;
  std::string text;
};

// Loads platform files (those with a `platform:` key) and the shared files
// they `include:`. Returns false with "file:line:col: message". With
// `all_errors`, an error in one rule or op class is collected there and the
// load goes on, so every error of a file is reported at once.
bool load_rule_database(const std::vector<RuleFile>& files, RuleDatabase& db, std::string& error,
                        std::vector<std::string>* all_errors = nullptr);

// The embedded database, or every *.yaml in `dir` when dir is not empty.
bool load_default_rule_database(const std::string& dir, RuleDatabase& db, std::string& error);

// Reads rule files: each path is a file, or a folder whose *.yaml files are read.
bool read_rule_paths(const std::vector<std::string>& paths, std::vector<RuleFile>& files, std::string& error);

// A user's rule files (`extends: <platform>`, then ops/rules as in a platform
// file) extend the database: a rule with a known id replaces that rule (its
// defined_at then names the user's file), new ids are added, listed ops are
// reclassified.
bool extend_rule_database(RuleDatabase& db, const std::vector<RuleFile>& files, std::string& error,
                          std::vector<std::string>* all_errors = nullptr);

}  // namespace bpulint
