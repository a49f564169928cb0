// fuzz_model: arbitrary bytes as an .onnx file through the whole read side:
// load_model -> extract_facts -> evaluate (built-in j6p; both memoized and
// afresh, which must agree) -> placement ->
// plan_fixes, then the JSON and SARIF renderers, whose output must be valid
// JSON whatever bytes the model's names hold, and the graph report's DOT
// (the graph to draw; Graphviz's layout is too slow to run per input).
// Must never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "bpulint/engine/evaluate.h"
#include "bpulint/engine/facts.h"
#include "bpulint/fix/fixes.h"
#include "bpulint/base/json_writer.h"
#include "bpulint/lint/lint.h"
#include "bpulint/model/model_checker.h"
#include "bpulint/model/model_loader.h"
#include "bpulint/render/render_graph.h"
#include "bpulint/render/render_machine.h"
#include "bpulint/render/render_text.h"
#include "fuzz_util.h"

using namespace bpulint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::temp_dir() + "/model.onnx";
  fuzz::write_bytes(path, data, size);
  const Platform& platform = fuzz::j6p();

  // The steps one by one, as the brief of each module promises.
  {
    LoadedModel loaded;
    std::string error;
    if (!load_model(path, loaded, error)) {
      FUZZ_CHECK(!error.empty(), "load_model failed without a message");
      FUZZ_CHECK(error.find('\n') == std::string::npos, "multi-line load error: " + error);
      return 0;
    }
    FUZZ_CHECK(loaded.model != nullptr, "load_model succeeded without a model");
    // Nothing stripped: the loader parsed the file itself (in two halves when
    // the graph is big, always in the fuzz build), which must be protobuf's
    // own parse of the same bytes.
    if (loaded.stripped_tensors == 0) {
      onnx::ModelProto reference;
      FUZZ_CHECK(reference.ParseFromArray(data, static_cast<int>(size)), "loaded bytes protobuf cannot parse");
      FUZZ_CHECK(reference.SerializeAsString() == loaded.model->SerializeAsString(),
                 "the split parse differs from protobuf's own");
    }
    ModelFacts facts;
    if (!extract_facts(loaded, {}, facts, error)) {
      FUZZ_CHECK(!error.empty(), "extract_facts failed without a message");
      return 0;
    }
    // A lint leaves the main graph's names to the walk: whatever the checker
    // passes with them left out, and the walk passes, ONNX's checker passes.
    if (checker_cannot_judge(*loaded.model).empty()) {
      std::string alone_error, by_caller_error;
      const bool alone = check_onnx_model(*loaded.model, loaded.folder, alone_error);
      const bool by_caller = check_onnx_model(*loaded.model, loaded.folder, by_caller_error, NameCheck::ByCaller);
      FUZZ_CHECK(!(by_caller && facts.main_graph_names_valid) || alone,
                 "the walk passed names the checker refuses: " + alone_error);
      FUZZ_CHECK(!alone || by_caller, "the checker refuses without the names what it passes with them");
    }
    const auto diagnostics = evaluate(facts, platform);
    for (const auto& d : diagnostics) {
      FUZZ_CHECK(d.node < static_cast<long>(facts.nodes.size()), "diagnostic names a node out of range");
    }
    // Look-alike nodes share inference and rule checks; inferring and
    // checking every node afresh must give the same facts and findings.
    FactOptions fresh_options;
    fresh_options.memoize_inference = false;
    ModelFacts fresh;
    FUZZ_CHECK(extract_facts(loaded, fresh_options, fresh, error), "the walk fails only with inference memoized");
    FUZZ_CHECK(fresh.tensors.size() == facts.tensors.size(), "memoized inference changed the tensor count");
    for (size_t i = 0; i < fresh.tensors.size(); ++i) {
      const auto* a = fresh.tensors[i].type;
      const auto* b = facts.tensors[i].type;
      FUZZ_CHECK((a == nullptr) == (b == nullptr) && (a == nullptr || a->SerializeAsString() == b->SerializeAsString()),
                 "memoized inference changed the type of '" + std::string(fresh.tensors[i].name) + "'");
      FUZZ_CHECK(fresh.tensors[i].cause == facts.tensors[i].cause, "memoized inference changed a root cause");
    }
    const auto checked_afresh = evaluate(facts, platform, false);
    FUZZ_CHECK(checked_afresh.size() == diagnostics.size(), "memoized rule checks changed the number of findings");
    for (size_t i = 0; i < diagnostics.size(); ++i) {
      const Diagnostic& a = checked_afresh[i];
      const Diagnostic& b = diagnostics[i];
      bool same = a.rule == b.rule && a.outcome == b.outcome && a.message == b.message && a.node == b.node &&
                  a.cause == b.cause && a.fixes == b.fixes && a.facts.size() == b.facts.size();
      for (size_t t = 0; same && t < a.facts.size(); ++t) {
        same = a.facts[t].text == b.facts[t].text && a.facts[t].value.identical(b.facts[t].value);
      }
      FUZZ_CHECK(same, "memoized rule checks changed a finding: " + a.message + " / " + b.message);
    }
    const auto plans = plan_fixes(facts, diagnostics, platform);
    for (const auto& p : plans) {
      FUZZ_CHECK(p.node >= 0 && p.node < static_cast<long>(facts.nodes.size()), "plan for a node out of range");
    }
  }

  // The whole pipeline and the machine renderers.
  ModelReport report = lint(path, ModelPlan::defaults(platform));
  if (!report.ok) return 0;
  RunInfo run;
  run.tool_version = "fuzz";
  run.platform = &platform;
  RunInfo::Model m;
  m.report = &report;
  m.path = path;
  run.models.push_back(m);
  std::string why;
  const std::string json = render_json(run);
  FUZZ_CHECK(fuzz::json_valid(json, &why), "render_json produced invalid JSON: " + why);
  const std::string sarif = render_sarif(run, SarifProfile::Spec);
  FUZZ_CHECK(fuzz::json_valid(sarif, &why), "render_sarif produced invalid JSON: " + why);
  (void)render_github(run);
  const std::string dot = render_dot(run);
  FUZZ_CHECK(sanitize_utf8(dot) == dot, "render_dot produced invalid UTF-8");
  std::ostringstream text;
  render_text(text, report, platform, {});
  for (const auto& plan : report.fix_plans)
    for (const auto& o : plan.options) (void)cost_text(o.cost);
  return 0;
}
