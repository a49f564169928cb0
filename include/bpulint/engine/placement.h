// Where each node is predicted to run, and how fragmented the model is:
// every connected region of CPU nodes costs a BPU<->CPU round trip.
#pragma once

#include <cstddef>
#include <vector>

#include "bpulint/engine/diagnostic.h"
#include "bpulint/engine/facts.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

// RuntimeShape: shape arithmetic on a dynamic dim (see Fold); it folds away
// once the input is pinned, and is neither a BPU nor a CPU op before that.
// NoCompile: an error-level compile_error rule fails on the node: the model
// does not compile, so the node runs nowhere.
enum class Placement { Bpu, Cpu, Folded, Unknown, RuntimeShape, NoCompile, DataShape };
const char* placement_name(Placement p);

struct Summary {
  size_t nodes = 0;
  size_t bpu = 0;
  size_t cpu = 0;
  size_t folded = 0;
  size_t unknown = 0;
  size_t runtime_shape = 0;  // shape arithmetic on dynamic dims
  size_t data_shape = 0;     // shape arithmetic on data-dependent shapes (NonZero, ...)
  size_t no_compile = 0;     // nodes that will not compile
  size_t cpu_islands = 0;
  // Findings (a node with two errors counts two), then where they are: the
  // nodes with at least one finding of that level, and the findings on the
  // model itself (on no node).
  size_t errors = 0;
  size_t warnings = 0;
  size_t notes = 0;
  size_t error_nodes = 0, warning_nodes = 0, note_nodes = 0;
  size_t model_errors = 0, model_warnings = 0, model_notes = 0;
  // Rule checks that ended in "cannot verify" for lack of a fact, whether
  // shown one by one or folded into a root-cause note (placement-unknown ops
  // are not checks: they are `unknown` above).
  size_t unverified = 0;
  size_t waived = 0;     // hidden by a waiver (not in errors/warnings/notes)
  size_t baselined = 0;  // hidden by the baseline
};

// A node the walk constant-folds is folded; shape arithmetic on a dynamic dim
// is RuntimeShape. Otherwise a node goes to the CPU when its op is classified
// `cpu` or an error-level cpu_fallback rule fails on it, and keeps its op
// class when not. An error-level compile_error failure overrides all of it.
std::vector<Placement> place_nodes(const ModelFacts& facts, const Platform& platform,
                                   const std::vector<Diagnostic>& diagnostics);

// Connected components of CPU nodes over data edges within each graph: the
// island of each node, numbered from 0 in graph order of its first node; -1
// for nodes not on the CPU.
std::vector<long> cpu_islands(const ModelFacts& facts, const std::vector<Placement>& placement);
size_t count_cpu_islands(const ModelFacts& facts, const std::vector<Placement>& placement);

Summary summarize(const ModelFacts& facts, const std::vector<Placement>& placement,
                  const std::vector<Diagnostic>& diagnostics);

}  // namespace bpulint
