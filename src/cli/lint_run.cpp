#include "lint_run.h"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "bpulint/rules/builtin_rules.h"
#include "bpulint/lint/config.h"
#include "bpulint/render/markup.h"
#include "bpulint/base/exit_codes.h"
#include "bpulint/fix/fix_apply.h"
#include "bpulint/lint/hb_config.h"
#include "bpulint/lint/lint.h"
#include "bpulint/lint/settings.h"
#include "bpulint/lint/triage.h"
#include "bpulint/model/model_writer.h"
#include "bpulint/base/io_plan.h"
#include "bpulint/base/output_file.h"
#include "bpulint/render/output_formats.h"
#include "bpulint/fix/pytorch_snippet.h"
#include "bpulint/render/render_graph.h"
#include "bpulint/render/render_machine.h"
#include "bpulint/render/render_text.h"
#include "fix_step.h"
#include "folder_walk.h"
#include "model_run.h"
#include "run_report.h"
#include "stdin_spool.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

class Runner {
 public:
  explicit Runner(const RunOptions& o) : o_(o) {}

  int run() {
    if (format_ == nullptr) return fail("unknown --format '" + o_.format + "'");
    std::vector<std::string> paths, input_errors;
    std::string error;
    WalkOptions walk;
    walk.excludes = o_.excludes;
    walk.config_file = o_.config_file;
    walk.isolated = o_.isolated;
    if (!expand_inputs(o_.inputs, walk, paths, input_errors, error)) return fail(error);
    for (const auto& e : input_errors) std::cerr << printable_text(e) << "\n";
    broken_ = !input_errors.empty();
    if (paths.empty()) {
      return input_errors.empty() ? fail("no model given (usage: bpu-lint MODEL.onnx... [--platform j6p])")
                                  : kExitError;
    }
    const auto from_stdin = std::count(paths.begin(), paths.end(), std::string("-"));
    if (from_stdin > 1) return fail("'-' (standard input) can be given only once");
    if (from_stdin == 1) {
      if (o_.fix && o_.fixed_model.empty()) return fail("-: --fix on standard input needs --fixed-model");
      if (!stdin_.read(error)) return fail("-: " + error);
    }
    const auto file_of = [&](const std::string& p) { return p == "-" ? stdin_.path() : p; };
    if ((!o_.fixed_model.empty() || !o_.pytorch_snippet.empty()) && paths.size() != 1) {
      return fail(std::string(o_.fixed_model.empty() ? "--pytorch-snippet" : "--fixed-model") +
                  " needs exactly one model");
    }
    // One compile config describes one model: the fixed copy is that model's.
    if (o_.fix && o_.hb_config != nullptr && paths.size() != 1) {
      return fail("--fix with --hb-config needs exactly one model (the config's)");
    }
    if (!o_.baseline.empty() && !load_baseline(o_.baseline, baseline_, error)) return fail(error);
    // The first model is read and parsed while the configuration and the
    // rule database load: neither depends on the other, and on a 2-core
    // machine that hides the rule load (~50 ms) behind the parse. Deferred
    // too: when no thread can be started, the model is read when it is needed.
    // An lvalue on purpose: when the thread cannot start, libstdc++ falls back
    // to deferred with arguments it has already moved from (an rvalue path
    // arrives empty).
    const std::string first_file = file_of(paths.front());
    first_read_ = std::async(std::launch::async | std::launch::deferred, read_model, first_file);
    std::error_code ec;
    if (!o_.source_root.empty() && !fs::is_directory(o_.source_root, ec)) {
      return fail("--source-root " + o_.source_root + ": not a folder");
    }
    for (const auto& p : paths) {
      ModelRun m;
      m.path = p;
      m.file = file_of(p);
      if (!setup_for(p, m.setup, error) ||
          !resolve_plan(m.setup->config, m.setup->db, p, cli_, o_.baseline.empty() ? nullptr : &baseline_, m.plan,
                        error)) {
        return fail(error);
      }
      models_.push_back(std::move(m));
    }
    std::vector<ScopedModel> scoped;
    for (const auto& m : models_) scoped.push_back({m.path, &m.setup->config, m.plan.platform});
    if (!check_selectors(scoped, cli_, error)) return fail(error);
    if (o_.hb_config != nullptr && text_output()) {
      out_ << printable_text(o_.hb_config->path) << ": Horizon compile config: "
           << printable_text(hb_config_summary(*o_.hb_config)) << "\n";
    }
    lint_models(models_, o_.jobs, first_read_);
    for (auto& m : models_) finish(m);
    return conclude();
  }

 private:
  int fail(const std::string& message) {
    std::cerr << "bpu-lint: error: " << printable_text(message) << "\n";
    return kExitError;
  }

  bool setup_for(const std::string& model, Setup*& out, std::string& error) {
    std::string config_path = o_.config_file;
    if (config_path.empty() && !o_.isolated) config_path = find_config(model);
    auto& setup = setups_[config_path];
    if (setup == nullptr && !load_setup(config_path, o_, setup, error)) return false;
    out = setup.get();
    return true;
  }

  // The models read: no output may replace one.
  std::vector<std::string> model_paths() const {
    std::vector<std::string> paths;
    for (const auto& m : models_) paths.push_back(m.path);
    return paths;
  }

  bool text_output() const { return format_->text; }

  TextOptions text_options() const {
    TextOptions t;
    t.color = o_.color && o_.output_file.empty();
    t.concise = o_.format == "concise";
    t.show_waived = o_.show_waived;
    t.min_severity = o_.min_severity;
    return t;
  }

  void finish(ModelRun& m) {
    ModelReport& r = *m.report;
    if (!r.ok) {
      std::cerr << printable_text(m.path + ": error: " + r.error) << "\n";
      broken_ = true;
      return;
    }
    locate_sources(r, sources_);
    if (text_output()) render_text(out_, r, *m.plan.platform, text_options());
    if (!o_.pytorch_snippet.empty() &&
        !write_pytorch_snippet(text_output() ? out_ : std::cerr, r, o_.fix_strategy, o_.pytorch_snippet, model_paths())) {
      broken_ = true;
    }
    if (o_.fix && !fix_and_relint(m, o_, text_output() ? out_ : std::cerr, text_output() ? &out_ : nullptr,
                                  text_options())) {
      broken_ = true;
    }
  }

  int conclude() {
    const std::vector<std::string> notes = configuration_notes(models_, setups_, baseline_, o_);
    bool findings = false;
    for (const auto& m : models_) findings = findings || (m.verdict().ok && m.verdict().summary.errors > 0);
    // --exit-non-zero-on-fix (the fix hook): a fix written is a change for
    // the author to review and stage, so the commit stops (as ruff's does).
    bool wrote_fix = false;
    for (const auto& m : models_) wrote_fix = wrote_fix || (m.fix_run && m.fix_run->written);
    const int code = broken_ ? kExitError
                     : (findings && !o_.exit_zero) || (wrote_fix && o_.exit_non_zero_on_fix) ? kExitFindings
                                                                                              : kExitClean;
    if (text_output()) {
      for (const auto& n : notes) out_ << "warning: " << printable_text(n) << "\n";
      if (o_.statistics) print_statistics(out_, models_);
    } else {
      const RunInfo info = run_info(models_, o_, notes, code, format_->relative_uris);
      out_ << format_->render(info, o_.sarif_profile == "spec" ? SarifProfile::Spec : SarifProfile::GitHub);
      for (const auto& n : notes) std::cerr << "bpu-lint: warning: " << printable_text(n) << "\n";
    }
    if (!o_.write_baseline.empty() && !write_clash_reported(o_.write_baseline)) {
      std::vector<const ModelReport*> reports;
      for (const auto& m : models_) {
        if (m.report->ok) reports.push_back(m.report.get());
      }
      std::string error;
      if (!write_output(o_.write_baseline, baseline_text(reports, o_.write_baseline), model_paths(), error)) {
        std::cerr << printable_text(o_.write_baseline + ": error: " + error) << "\n";
        return kExitError;
      }
      std::cerr << "bpu-lint: wrote the baseline " << printable_text(o_.write_baseline) << "\n";
    }
    if (!o_.output_file.empty() && write_clash_reported(o_.output_file)) {
      return kExitError;  // said when the model was loaded; nothing is written
    } else if (!o_.output_file.empty()) {
      std::string error;
      if (!write_output(o_.output_file, buffer_.str(), model_paths(), error)) {
        std::cerr << printable_text(o_.output_file + ": error: " + error) << "\n";
        return kExitError;
      }
    } else {
      std::cout << buffer_.str();
      std::cout.flush();
    }
#ifndef BPULINT_FREE_AT_EXIT
    // Tearing down 100k-node models costs a third of a run; the process is
    // about to exit, so the reports are left for the OS to reclaim.
    for (auto& m : models_) {
      (void)m.report.release();
      (void)m.fixed.release();
    }
#endif
    return code;
  }

  const RunOptions& o_;
  const OutputFormat* format_ = find_output_format(o_.format);  // the command line accepts only names it finds
  const CommandLineSettings cli_ = command_line_settings(o_);
  std::map<std::string, std::unique_ptr<Setup>> setups_;  // by configuration path ("" = none)
  std::vector<ModelRun> models_;
  StdinSpool stdin_;                   // a model piped in as '-' (before first_read_: outlives it)
  std::future<ModelRead> first_read_;  // models_[0]'s file, read while the rules load
  Baseline baseline_;
  SourceResolver sources_{o_.source_root};
  // Text goes straight to stdout as each model finishes; with -o, or for the
  // machine formats (one document), it is collected first.
  std::ostringstream buffer_;
  std::ostream& out_ = o_.output_file.empty() && format_ != nullptr && format_->text
                           ? static_cast<std::ostream&>(std::cout)
                           : static_cast<std::ostream&>(buffer_);
  bool broken_ = false;
};

}  // namespace

int run_lint(const RunOptions& options) { return Runner(options).run(); }

}  // namespace bpulint
