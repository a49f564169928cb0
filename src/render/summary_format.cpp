#include "summary_format.h"

namespace bpulint {
namespace {

std::string plural(size_t n, const std::string& one, const std::string& many) { return n == 1 ? one : many; }

// Where a level's findings are, for its label: " on 3 nodes", " on 1 node and
// the model", " on the model"; "" when there are none.
std::string where(size_t nodes, size_t on_model) {
  if (nodes == 0) return on_model == 0 ? "" : " on the model";
  return " on " + std::to_string(nodes) + plural(nodes, " node", " nodes") + (on_model == 0 ? "" : " and the model");
}

}  // namespace

std::vector<SummaryPart> placement_parts(const Summary& s) {
  using K = SummaryPart::Kind;
  std::vector<SummaryPart> parts = {{K::Placement, s.bpu, "on BPU"}, {K::Placement, s.cpu, "on CPU"},
                                    {K::Placement, s.folded, "folded"}};
  if (s.unknown > 0) parts.push_back({K::Placement, s.unknown, "unknown"});
  if (s.runtime_shape > 0) {
    parts.push_back({K::Placement, s.runtime_shape, plural(s.runtime_shape, "runtime shape op", "runtime shape ops")});
  }
  if (s.data_shape > 0) {
    parts.push_back({K::Placement, s.data_shape,
                     plural(s.data_shape, "data-dependent shape op", "data-dependent shape ops")});
  }
  if (s.no_compile > 0) parts.push_back({K::Placement, s.no_compile, "will not compile"});
  return parts;
}

std::vector<SummaryPart> finding_parts(const Summary& s) {
  using K = SummaryPart::Kind;
  std::vector<SummaryPart> parts = {{K::Islands, s.cpu_islands, plural(s.cpu_islands, "CPU island", "CPU islands")},
                                    {K::Errors, s.errors,
                                     plural(s.errors, "error", "errors") + where(s.error_nodes, s.model_errors)},
                                    {K::Warnings, s.warnings,
                                     plural(s.warnings, "warning", "warnings") + where(s.warning_nodes, s.model_warnings)},
                                    {K::Notes, s.notes,
                                     plural(s.notes, "note", "notes") + where(s.note_nodes, s.model_notes)}};
  if (s.unverified > 0) {
    parts.push_back({K::Unverified, s.unverified, plural(s.unverified, "check unverified", "checks unverified")});
  }
  if (s.waived > 0) parts.push_back({K::Waived, s.waived, "waived"});
  if (s.baselined > 0) parts.push_back({K::Baselined, s.baselined, "in baseline"});
  return parts;
}

std::string summary_text(const Summary& s) {
  std::string out = std::to_string(s.nodes) + plural(s.nodes, " node:", " nodes:");
  const char* sep = " ";
  for (const auto& p : placement_parts(s)) {
    out += sep + std::to_string(p.count) + " " + p.label;
    sep = ", ";
  }
  for (const auto& p : finding_parts(s)) {
    using K = SummaryPart::Kind;
    const std::string item = std::to_string(p.count) + " " + p.label;
    switch (p.kind) {
      case K::Islands: out += "; " + item + " (BPU<->CPU round trips)"; break;
      case K::Errors: out += "; findings: " + item; break;
      case K::Unverified: out += " (" + item + ")"; break;
      default: out += ", " + item; break;
    }
  }
  return out;
}

}  // namespace bpulint
