#include "bpulint/render/output_formats.h"

#include "bpulint/render/render_graph.h"

namespace bpulint {

const std::vector<OutputFormat>& output_formats() {
  static const std::vector<OutputFormat> formats = {
      {"text", true, nullptr, false},
      {"concise", true, nullptr, false},
      {"json", false, [](const RunInfo& run, SarifProfile) { return render_json(run); }, false},
      {"sarif", false, [](const RunInfo& run, SarifProfile profile) { return render_sarif(run, profile); }, true},
      {"github", false, [](const RunInfo& run, SarifProfile) { return render_github(run); }, false},
      {"html", false, [](const RunInfo& run, SarifProfile) { return render_html(run); }, false},
      {"dot", false, [](const RunInfo& run, SarifProfile) { return render_dot(run); }, false},
      {"csv", false, [](const RunInfo& run, SarifProfile) { return render_csv(run); }, false},
      {"gitlab", false, [](const RunInfo& run, SarifProfile) { return render_gitlab(run); }, true},
      {"junit", false, [](const RunInfo& run, SarifProfile) { return render_junit(run); }, false},
      {"markdown", false, [](const RunInfo& run, SarifProfile) { return render_markdown(run); }, false},
  };
  return formats;
}

const OutputFormat* find_output_format(const std::string& name) {
  for (const auto& f : output_formats()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::vector<std::string> output_format_names() {
  std::vector<std::string> names;
  for (const auto& f : output_formats()) names.push_back(f.name);
  return names;
}

}  // namespace bpulint
