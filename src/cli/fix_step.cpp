#include "fix_step.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "bpulint/base/io_plan.h"
#include "bpulint/fix/fix_apply.h"
#include "bpulint/lint/hb_config_writer.h"
#include "bpulint/lint/settings.h"
#include "bpulint/render/markup.h"
#include "bpulint/model/model_writer.h"
#include "bpulint/base/output_file.h"
#include "bpulint/fix/pytorch_snippet.h"
#include "bpulint/fix/quantised_weight.h"

namespace bpulint {

void say_nothing_to_fix(std::ostream& log, const ModelReport& r, const Platform& platform) {
  // Said once, with what is left and why: no rule that fired offers a rewrite here.
  // A model fix offered that cannot apply says why, for the findings it would settle.
  std::set<size_t> offered;
  for (const ModelFixPlan& p : r.model_fix_plans) {
    if (p.why_not.empty()) continue;
    log << printable_text(r.path) << ": " << p.kind << " cannot apply: " << printable_text(p.why_not) << "\n";
    offered.insert(p.settles.begin(), p.settles.end());
  }
  std::map<std::string, size_t> unfixed;  // rule id -> error findings
  size_t on_nodes = 0;                     // of them on a node (not model-level, e.g. a dynamic input)
  for (size_t i = 0; i < r.diagnostics.size(); ++i) {
    const Diagnostic& d = r.diagnostics[i];
    if (d.severity != Severity::Error || d.outcome != Outcome::Fail || !d.shown() || offered.count(i) != 0) continue;
    ++unfixed[d.rule->id];
    on_nodes += d.node >= 0 ? 1 : 0;
  }
  if (unfixed.empty() && !offered.empty()) return;
  if (unfixed.empty()) {
    log << printable_text(r.path) << ": nothing to fix\n";
    return;
  }
  std::string rules;
  size_t errors = 0;
  for (const auto& [id, n] : unfixed) {
    rules += (rules.empty() ? "" : ", ") + id + (n > 1 ? " x" + std::to_string(n) : "");
    errors += n;
  }
  // Worded as a fix_blocked ends: what is left to change is the PyTorch source.
  log << printable_text(r.path) << ": nothing --fix can rewrite: " << errors << " error finding"
      << (errors == 1 ? " (" + printable_text(rules) + ") offers" : "s (" + printable_text(rules) + ") offer") << " no fix on "
      << printable_text(platform.name);
  if (on_nodes == 1) log << "; the layer needs a change in its PyTorch source";
  if (on_nodes > 1) log << "; the layers need a change in their PyTorch source";
  log << " (bpu-lint explain " << printable_text(unfixed.begin()->first) << ")\n";
}

namespace {

// The compile-config half of --fix: the chosen config fixes added to a copy
// of --hb-config, proven, written. False after an error (said on `log`).
bool write_fixed_config(ModelRun& m, const RunOptions& o, const std::vector<const ConfigFixPlan*>& chosen,
                        const std::string& folder, std::ostream& log, HbConfig& fixed) {
  const HbConfig& config = *o.hb_config;
  auto run = std::make_unique<ConfigFixRun>();
  run->config_path = config.path;
  run->output_path = o.fixed_config.empty() ? default_fixed_config_path(config.path, folder) : o.fixed_config;
  const std::vector<ConfigEdit> edits = merge_config_edits(chosen);
  for (const ConfigFixPlan* p : chosen) {
    const FixKind* kind = find_fix_kind(p->kind);
    for (const ConfigEdit& e : p->edits) {
      run->added.push_back({p->kind, p->rule, e.node, config_edit_text(e), kind->config->evidence});
    }
  }
  const std::vector<std::string> inputs = {m.path, config.path};
  std::string text, error, failed;  // failed: the file the error is about
  if (!fix_hb_config_text(config.text, config.path, edits, text, error)) {
    failed = config.path;
  } else if ((o.fixed_config.empty() && !plan_write(run->output_path, "the fixed compile config", error)) ||
             !write_output(run->output_path, text, inputs, error)) {
    failed = run->output_path;
  } else if (!parse_hb_config(text, run->output_path, fixed, error)) {  // proven already: read as written
    failed = run->output_path;
  }
  if (!failed.empty()) {
    run->error = error;
    std::cerr << printable_text(failed + ": error: " + error) << "\n";
    m.config_fix_run = std::move(run);
    return false;
  }
  fixed.text = std::move(text);
  run->written = true;
  log << printable_text(config.path) << ": wrote " << printable_text(run->output_path) << " with " << edits.size()
      << " node_info entr" << (edits.size() == 1 ? "y" : "ies") << " added or changed (every other line as it was):\n";
  for (const auto& a : run->added) {
    log << "    " << printable_text(a.line) << "   # " << a.kind << ", settles " << a.rule << "\n";
  }
  std::set<std::string> said;  // each kind's evidence once
  for (const ConfigFixPlan* p : chosen) {
    const FixKind* kind = find_fix_kind(p->kind);
    if (!said.insert(p->kind).second) continue;
    log << "  " << p->kind << " (" << applicability_name(kind->applicability)
        << ": the node is quantised where it ran in float; check accuracy after calibration): "
        << printable_text(kind->config->evidence) << "\n";
  }
  m.config_fix_run = std::move(run);
  return true;
}

// The model fixes --fix applies, in catalog order, each on the lint of the
// model the step before wrote (`current`: the original's report, or the
// lint of the layer rewrites' output in `step`). Each written output becomes
// `relint_file`; `step` then holds its lint. False after an error.
bool apply_model_fixes(ModelRun& m, const RunOptions& o, const std::vector<const ModelFixPlan*>& chosen,
                       const ModelPlan& relint, std::string& relint_file, std::unique_ptr<ModelReport>& step,
                       std::ostream& log) {
  const ModelReport& r = *m.report;
  const std::string fixed_path = o.fixed_model.empty() ? default_fixed_path(r.path) : o.fixed_model;
  for (const ModelFixPlan* wanted : chosen) {
    const ModelReport& current = step != nullptr ? *step : r;
    const FixKind* kind = find_fix_kind(wanted->kind);
    const auto plan = std::find_if(current.model_fix_plans.begin(), current.model_fix_plans.end(),
                                   [&](const ModelFixPlan& p) { return p.kind == wanted->kind; });
    if (plan == current.model_fix_plans.end() || !plan->why_not.empty()) {
      log << printable_text(r.path) << ": " << wanted->kind << " no longer applies after the fixes before it\n";
      continue;
    }
    ModelFixOutcome outcome;
    outcome.kind = wanted->kind;
    kind->model->apply({*current.loaded, current.facts, current.placement, current.diagnostics}, *plan,
                       // Standard input has no name: the split's parts are named after --fixed-model.
                       {r.path == "-" ? fixed_path : r.path, fixed_path, o.external_data}, outcome);
    if (outcome.refused) {  // nothing written, the model stays as the step before left it
      log << printable_text(r.path) << ": " << wanted->kind << ": not applied: " << printable_text(outcome.error) << "\n";
      m.model_fix_runs.push_back(std::move(outcome));
      continue;
    }
    if (!outcome.written) {
      std::cerr << printable_text(outcome.error) << "\n";
      m.model_fix_runs.push_back(std::move(outcome));
      return false;
    }
    log << printable_text(r.path) << ": " << wanted->kind << " (" << applicability_name(kind->applicability)
        << "): " << printable_text(outcome.said) << "; wrote ";
    for (size_t i = 0; i < outcome.files.size(); ++i) {
      log << (i ? ", " : "") << printable_text(outcome.files[i].second) << " (" << outcome.files[i].first << ")";
    }
    log << "\n";
    relint_file = outcome.relint;
    m.model_fix_runs.push_back(outcome);
    step = std::make_unique<ModelReport>(lint(relint_file, relint, read_model(relint_file)));
    if (!step->ok) {
      std::cerr << printable_text(relint_file + ": error: " + step->error) << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace

bool fix_and_relint(ModelRun& m, const RunOptions& o, std::ostream& log, std::ostream* text_out,
                    const TextOptions& text) {
  const ModelReport& r = *m.report;
  const std::vector<const ConfigFixPlan*> config_fixes = choose_config_fixes(r.config_fix_plans, o.fix_strategy);
  const std::vector<const ModelFixPlan*> model_fixes = choose_model_fixes(r.model_fix_plans, o.fix_strategy);
  if (r.fix_plans.empty() && config_fixes.empty() && model_fixes.empty()) {
    say_nothing_to_fix(log, r, *m.plan.platform);
    return true;
  }
  bool ok = true;
  std::string relint_file = m.file;  // the model the re-lint reads: the original, or what --fix wrote last
  ModelPlan relint = m.plan;
  std::unique_ptr<ModelReport> step;  // the lint of what --fix wrote last, before any config fix
  if (!r.fix_plans.empty()) {
    std::string out = o.fixed_model.empty() ? default_fixed_path(r.path) : o.fixed_model;
    // A model fix that writes the fixed model reads the layer rewrites'
    // output: that goes to a file of its own (the writer never replaces the
    // model it reads), <fixed stem>.layers.onnx, kept for review.
    if (std::any_of(model_fixes.begin(), model_fixes.end(),
                    [](const ModelFixPlan* p) { return find_fix_kind(p->kind)->model->writes_fixed_model; })) {
      const std::filesystem::path fixed(out);
      out = (fixed.parent_path() / (fixed.stem().string() + ".layers.onnx")).string();
    }
    m.fix_run = std::make_unique<FixRun>(apply_fixes(*r.loaded, r.facts, r.fix_plans, o.fix_strategy, out, o.external_data));
    render_fix_run(log, r, *m.fix_run, text);
    ok = m.fix_run->error.empty();
    if (m.fix_run->written) relint_file = out;
  }
  const bool model_written = relint_file != m.file;
  if (model_written) relint.baseline = nullptr;  // its entries name the original's path
  if (ok && !model_fixes.empty()) {
    relint.baseline = nullptr;  // the model fixes write new files: the baseline names the original's path
    if (model_written) {
      step = std::make_unique<ModelReport>(lint(relint_file, relint, read_model(relint_file)));
      if (!step->ok) {
        std::cerr << printable_text(relint_file + ": error: " + step->error) << "\n";
        return false;
      }
    }
    ok = apply_model_fixes(m, o, model_fixes, relint, relint_file, step, log);
  }
  const bool written = relint_file != m.file;
  HbConfig fixed_config;
  bool config_written = false;
  if (!config_fixes.empty() && o.hb_config == nullptr) {
    // Said, not done: the lines are known, the file to add them to is not.
    log << printable_text(r.path) << ": " << config_fixes.size() << " finding" << (config_fixes.size() == 1 ? "" : "s")
        << " can be settled in the compile config (" << printable_text(config_fixes.front()->kind)
        << "); give it with --hb-config FILE and --fix writes the fixed copy\n";
  } else if (!config_fixes.empty()) {
    const std::string folder = std::filesystem::path(written ? relint_file : r.path).parent_path().string();
    config_written = write_fixed_config(m, o, config_fixes, r.path == "-" ? "" : folder, log, fixed_config);
    ok = ok && config_written;
  }
  if (!written && !config_written) return ok;
  if (config_written) {
    relint.facts.config_float_nodes.clear();
    plan_compile_config(fixed_config, relint);
    step.reset();  // the config changes the findings: lint again
  }
  const std::string shown = written ? relint_file : r.path;
  m.fixed = step != nullptr ? std::move(step) : std::make_unique<ModelReport>(lint(shown, relint, read_model(relint_file)));
  if (!m.fixed->ok) {
    std::cerr << printable_text(shown + ": error: " + m.fixed->error) << "\n";
    m.fixed.reset();
    return false;
  }
  if (text_out != nullptr) {
    *text_out << "re-lint of " << printable_text(shown);
    if (config_written) *text_out << " with " << printable_text(m.config_fix_run->output_path);
    *text_out << ":\n";
    render_text(*text_out, *m.fixed, *m.plan.platform, text);
  }
  return ok;
}

namespace {

// Why the PyTorch snippet cannot replace a layer that has an ONNX fix; "" when it can.
std::string snippet_refusal(const ModelReport& r, const NodeFacts& node, const std::string& torch_path) {
  // torch.onnx names a module's nodes "/<scope>/.../<Op>": no scope means no module was called
  // (F.conv_transpose3d in some forward(), or a model from another exporter). Nothing to swap.
  if (torch_path.empty()) {
    return "the ONNX node name gives no PyTorch module path (the layer is called as F.conv_transpose3d, or the "
           "model does not come from torch.onnx), so there is no nn.ConvTranspose3d to swap; change the call "
           "in the source by hand, or fix the ONNX model with --fix";
  }
  // A fake-quantised weight (QuantizeLinear -> DequantizeLinear in the export) is computed by the
  // layer's forward() (a QAT subclass) or around it: the replacement modules run the float layer
  // and would drop that fake quant, so their outputs would differ from the QAT layer's.
  QuantisedWeight q;
  std::string why_not;
  if (find_quantised_weight(r.facts, node, q, why_not) == WeightForm::Quantised && q.quantize != nullptr) {
    return "its weight is fake-quantised in the export (QuantizeLinear '" + q.quantize->name() +
           "' -> DequantizeLinear '" + q.dequantize->name() +
           "'), which the replacement modules (float layers) would drop; rewrite the QAT layer by hand, or fix "
           "the ONNX model with --fix, which keeps the fake quant";
  }
  return "";
}

}  // namespace

bool write_pytorch_snippet(std::ostream& log, const ModelReport& r, const std::string& strategy,
                           const std::string& snippet_path, const std::vector<std::string>& inputs) {
  std::vector<SnippetLayer> layers;
  size_t replaced = 0;
  std::vector<std::string> refused;  // layers with an ONNX fix that the snippet cannot replace: one line each
  for (const auto& plan : r.fix_plans) {
    std::string why_not;
    const FixOption* chosen = choose_fix(plan, strategy, why_not);
    const NodeFacts& node = r.facts.nodes[static_cast<size_t>(plan.node)];
    const std::string torch_path = torch_module_path(std::string(node.name));
    if (chosen != nullptr) {
      why_not = snippet_refusal(r, node, torch_path);
      if (!why_not.empty()) {
        refused.push_back(printable_text(r.path + ": " + node.op_type + " '" + std::string(node.display_name) +
                                         "': not replaced in the PyTorch snippet: " + why_not));
        chosen = nullptr;
      }
    }
    layers.push_back({chosen != nullptr ? chosen->id : "", plan.params, torch_path, chosen != nullptr ? "" : why_not,
                      std::string(node.display_name)});
    replaced += chosen != nullptr ? 1 : 0;
  }
  for (const auto& line : refused) log << line << "\n";
  if (replaced == 0) {
    log << printable_text(r.path) << (refused.empty() ? ": no layer has an applicable fix" : ": no layer can be replaced in PyTorch")
        << "; no PyTorch snippet written\n";
    return true;
  }
  std::string error;
  if (!write_output(snippet_path, pytorch_snippet_file(layers), inputs, error)) {
    std::cerr << printable_text(snippet_path + ": error: " + error) << "\n";
    return false;
  }
  const size_t left = layers.size() - replaced;
  log << printable_text(r.path) << ": wrote PyTorch replacements for " << replaced << " layer" << (replaced == 1 ? "" : "s")
      << " to " << printable_text(snippet_path);
  if (left > 0) {
    log << " (" << left << " flagged layer" << (left == 1 ? "" : "s") << " left as is, each with a comment saying why)";
  }
  log << "\n";
  return true;
}

}  // namespace bpulint
