// Where each node is predicted to run, and how fragmented the model is:
// every connected region of CPU nodes costs a BPU<->CPU round trip.
#pragma once

#include <cstddef>
#include <vector>

#include "bpulint/diagnostic.h"
#include "bpulint/facts.h"
#include "bpulint/rule_db.h"

namespace bpulint {

enum class Placement { Bpu, Cpu, Folded, Unknown };
const char* placement_name(Placement p);

struct Summary {
  size_t nodes = 0;
  size_t bpu = 0;
  size_t cpu = 0;
  size_t folded = 0;
  size_t unknown = 0;
  size_t cpu_islands = 0;
  size_t errors = 0;
  size_t warnings = 0;
  size_t notes = 0;
  size_t waived = 0;     // hidden by a waiver (not in errors/warnings/notes)
  size_t baselined = 0;  // hidden by the baseline
};

// A node goes to the CPU when its op is classified `cpu` or an error-level
// cpu_fallback rule fails on it; otherwise it keeps its op class.
std::vector<Placement> place_nodes(const ModelFacts& facts, const Platform& platform,
                                   const std::vector<Diagnostic>& diagnostics);

// Connected components of CPU nodes over data edges within each graph.
size_t count_cpu_islands(const ModelFacts& facts, const std::vector<Placement>& placement);

Summary summarize(const ModelFacts& facts, const std::vector<Placement>& placement,
                  const std::vector<Diagnostic>& diagnostics);

}  // namespace bpulint
