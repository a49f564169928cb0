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

#include "bpulint/builtin_rules.h"
#include "bpulint/config.h"
#include "bpulint/markup.h"
#include "bpulint/exit_codes.h"
#include "bpulint/fix_apply.h"
#include "bpulint/hb_config.h"
#include "bpulint/lint.h"
#include "bpulint/settings.h"
#include "bpulint/triage.h"
#include "bpulint/model_writer.h"
#include "bpulint/output_file.h"
#include "bpulint/output_formats.h"
#include "bpulint/pytorch_snippet.h"
#include "bpulint/render_graph.h"
#include "bpulint/render_machine.h"
#include "bpulint/render_text.h"
#include "folder_walk.h"
#include "stdin_spool.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {


// What one configuration file (or none) means for the models that use it.
struct Setup {
  Config config;
  RuleDatabase db;
};

struct ModelRun {
  std::string path;  // as given: what every message and report names ("-" for standard input)
  std::string file;  // what is read: the path, or standard input's spooled copy
  Setup* setup = nullptr;
  ModelPlan plan;  // resolve_plan: the configuration's layers, a Horizon compile config, then the command line
  std::unique_ptr<ModelReport> report;
  std::unique_ptr<FixRun> fix_run;
  std::unique_ptr<ModelReport> fixed;
};

class Runner {
 public:
  explicit Runner(const RunOptions& o) : o_(o) {
    cli_.platform = o.platform;
    cli_.select = o.select;
    cli_.ignore = o.ignore;
    cli_.input_shapes = o.facts.input_shapes;
    cli_.hb_config = o.hb_config;
    cli_.show_unverified = o.show_unverified;
  }

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
      out_ << o_.hb_config->path << ": Horizon compile config: " << hb_config_summary(*o_.hb_config) << "\n";
    }
    lint_all();
    for (auto& m : models_) finish(m);
    return conclude();
  }

 private:
  int fail(const std::string& message) {
    std::cerr << "bpu-lint: " << printable_text(message) << "\n";
    return kExitError;
  }

  bool setup_for(const std::string& model, Setup*& out, std::string& error) {
    std::string config_path = o_.config_file;
    if (config_path.empty() && !o_.isolated) config_path = find_config(model);
    auto it = setups_.find(config_path);
    if (it != setups_.end()) {
      out = it->second.get();
      return true;
    }
    auto setup = std::make_unique<Setup>();
    if (!config_path.empty() && !load_config(config_path, setup->config, error)) return false;
    if (!load_default_rule_database(o_.rules_dir, setup->db, error)) return false;
    std::vector<std::string> extra = setup->config.rule_paths;
    extra.insert(extra.end(), o_.extra_rules.begin(), o_.extra_rules.end());
    std::vector<RuleFile> files;
    if (!extra.empty() && (!read_rule_paths(extra, files, error) || !extend_rule_database(setup->db, files, error))) {
      return false;
    }
    out = setup.get();
    setups_.emplace(config_path, std::move(setup));
    return true;
  }

  // Linting is read-only and independent per model, so -j runs models in
  // parallel; everything after it happens in input order.
  void lint_all() {
    const size_t workers = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(1, o_.jobs)), models_.size()));
    max_known_opset();  // initialise ONNX's schema registry before threads share it
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < models_.size(); i = next++) {
        auto& m = models_[i];
        try {
          m.report = std::make_unique<ModelReport>(
              i == 0 && first_read_.valid()
                  ? lint(m.path, m.plan, first_read_.get())
                  : lint(m.path, m.plan, read_model(m.file)));
        } catch (const std::exception& e) {  // out of memory and the like: still one line, exit 2
          m.report = std::make_unique<ModelReport>();
          m.report->path = m.path;
          m.report->error = std::string("internal error: ") + e.what();
        }
      }
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
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
    if (!o_.pytorch_snippet.empty()) write_snippet(r);
    if (o_.fix) fix(m);
  }

  void write_snippet(const ModelReport& r) {
    std::vector<SnippetLayer> layers;
    size_t replaced = 0;
    for (const auto& plan : r.fix_plans) {
      std::string why_not;
      const FixOption* chosen = choose_fix(plan, o_.fix_strategy, why_not);
      const NodeFacts& node = r.facts.nodes[static_cast<size_t>(plan.node)];
      layers.push_back({chosen != nullptr ? chosen->id : "", plan.params, torch_module_path(std::string(node.name)),
                        chosen != nullptr ? "" : why_not, std::string(node.display_name)});
      replaced += chosen != nullptr ? 1 : 0;
    }
    std::ostream& log = text_output() ? out_ : std::cerr;
    if (replaced == 0) {
      log << r.path << ": no layer has an applicable fix; no PyTorch snippet written\n";
      return;
    }
    std::string error;
    if (!write_output(o_.pytorch_snippet, pytorch_snippet_file(layers), model_paths(), error)) {
      std::cerr << printable_text(o_.pytorch_snippet + ": error: " + error) << "\n";
      broken_ = true;
      return;
    }
    const size_t left = layers.size() - replaced;
    log << r.path << ": wrote PyTorch replacements for " << replaced << " layer" << (replaced == 1 ? "" : "s")
        << " to " << o_.pytorch_snippet;
    if (left > 0) log << " (" << left << " flagged layer" << (left == 1 ? "" : "s") << " left as is, each with a comment saying why)";
    log << "\n";
  }

  // --fix: rewrite, prove, write, then lint the written model with the same configuration.
  void fix(ModelRun& m) {
    const ModelReport& r = *m.report;
    std::ostream& log = text_output() ? out_ : std::cerr;
    if (r.fix_plans.empty()) {
      // Said once, with what is left and why: no rule that fired offers a rewrite here.
      std::map<std::string, size_t> unfixed;  // rule id -> error findings
      size_t on_nodes = 0;                     // of them on a node (not model-level, e.g. a dynamic input)
      for (const auto& d : r.diagnostics) {
        if (d.severity != Severity::Error || d.outcome != Outcome::Fail || !d.shown()) continue;
        ++unfixed[d.rule->id];
        on_nodes += d.node >= 0 ? 1 : 0;
      }
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
          << (errors == 1 ? " (" + rules + ") offers" : "s (" + rules + ") offer") << " no fix on " << m.plan.platform->name;
      if (on_nodes == 1) log << "; the layer needs a change in its PyTorch source";
      if (on_nodes > 1) log << "; the layers need a change in their PyTorch source";
      log << " (bpu-lint explain " << unfixed.begin()->first << ")\n";
      return;
    }
    const std::string out = o_.fixed_model.empty() ? default_fixed_path(r.path) : o_.fixed_model;
    m.fix_run = std::make_unique<FixRun>(apply_fixes(*r.loaded, r.facts, r.fix_plans, o_.fix_strategy, out, o_.external_data));
    render_fix_run(log, r, *m.fix_run, text_options());
    if (!m.fix_run->error.empty()) broken_ = true;
    if (!m.fix_run->written) return;
    // The written model is linted as the original was, without the baseline:
    // its entries name the original's path.
    ModelPlan relint = m.plan;
    relint.baseline = nullptr;
    m.fixed = std::make_unique<ModelReport>(lint(out, relint));
    if (!m.fixed->ok) {
      std::cerr << printable_text(out + ": error: " + m.fixed->error) << "\n";
      broken_ = true;
      m.fixed.reset();
      return;
    }
    if (text_output()) {
      out_ << "re-lint of " << out << ":\n";
      render_text(out_, *m.fixed, *m.plan.platform, text_options());
    }
  }

  // Warnings about the run's inputs, reported only for what this run could
  // judge: a waiver that matched nothing although models in its scope were
  // linted, a baseline entry of a linted model that no longer occurs, a
  // --input-shape that no model of the run has.
  std::vector<std::string> configuration_notes() const {
    std::vector<std::string> notes;
    std::map<const Waiver*, size_t> models_in_scope, waiver_matches;
    std::map<const Baseline::Entry*, size_t> baseline_matches;
    for (const auto& m : models_) {
      for (const Waiver* w : m.plan.waivers) ++models_in_scope[w];
      for (const ModelReport* r : {m.report.get(), m.fixed.get()}) {
        if (r == nullptr) continue;
        for (const auto& [w, n] : r->waiver_matches) waiver_matches[w] += n;
        for (const auto& [e, n] : r->baseline_matches) baseline_matches[e] += n;
      }
    }
    for (const auto& [path, setup] : setups_) {
      for (const auto& w : setup->config.waivers) {
        if (waiver_matches[&w] == 0 && models_in_scope[&w] > 0) {
          notes.push_back(w.where.str() + ": waiver for rule '" + w.rule + "' on node '" + w.node + "'" +
                          (w.model.empty() ? "" : " in '" + w.model + "'") + " matched nothing");
        }
      }
    }
    std::set<std::string> linted;
    for (const auto& m : models_) {
      if (!o_.baseline.empty() && m.report && m.report->ok) linted.insert(baseline_model_key(m.path, o_.baseline));
    }
    for (const auto& e : baseline_.entries) {
      const size_t matched = baseline_matches[&e];
      if (matched < e.count && linted.count(e.model) > 0) {
        notes.push_back(o_.baseline + ": stale baseline entry: " + e.rule + " on " + e.node + " in " + e.model + " (" +
                        std::to_string(e.count - matched) + " no longer found)");
      }
    }
    for (const auto& entry : o_.facts.input_shapes) {
      const std::string& pin = entry.first;
      // A model that refused the pin (its input has another rank or dims) has
      // the input: that error is the whole story.
      const bool used = std::any_of(models_.begin(), models_.end(), [&](const ModelRun& m) {
        const auto& p = m.report->facts.pinned_inputs;
        if (!m.report->ok) return m.report->error.rfind("--input-shape " + pin + ":", 0) == 0;
        return std::find(p.begin(), p.end(), pin) != p.end();
      });
      if (!used) notes.push_back("--input-shape " + pin + ": no model of this run has an input named '" + pin + "'");
    }
    return notes;
  }

  // Counts by the level each finding fired at (after --severity overrides and
  // "cannot verify" notes) and its outcome; checks folded into a root-cause
  // note count as what they are.
  // --statistics: findings per rule, level and outcome, over each model's verdict
  // (the re-lint after --fix), waived and baselined ones left out.
  std::vector<RuleCount> statistics() const {
    std::map<std::tuple<std::string, Severity, Outcome>, RuleCount> counts;
    for (const auto& m : models_) {
      const ModelReport* r = m.fixed ? m.fixed.get() : m.report.get();
      if (!r->ok) continue;
      for (const auto& d : r->diagnostics) {
        if (!d.waiver.empty() || d.baselined) continue;
        RuleCount& c = counts[{d.rule->id, d.severity, d.outcome}];
        c.rule = d.rule;
        c.severity = d.severity;
        c.outcome = d.outcome;
        ++c.count;
      }
    }
    std::vector<RuleCount> out;
    for (const auto& kv : counts) out.push_back(kv.second);
    return out;
  }

  void print_statistics() {
    out_ << "Statistics:\n";
    for (const RuleCount& c : statistics()) {
      out_ << "  " << c.count << "\t" << c.rule->id << "\t" << severity_name(c.severity) << "\t"
           << (c.outcome == Outcome::Fail ? "fail" : "cannot verify") << "\t" << c.rule->name << "\n";
    }
  }

  int conclude() {
    const std::vector<std::string> notes = configuration_notes();
    bool findings = false;
    for (const auto& m : models_) {
      const ModelReport* verdict = m.fixed ? m.fixed.get() : m.report.get();
      if (verdict->ok && verdict->summary.errors > 0) findings = true;
    }
    // --exit-non-zero-on-fix (the fix hook): a fix written is a change for
    // the author to review and stage, so the commit stops (as ruff's does).
    bool wrote_fix = false;
    for (const auto& m : models_) wrote_fix = wrote_fix || (m.fix_run && m.fix_run->written);
    const int code = broken_ ? kExitError
                     : (findings && !o_.exit_zero) || (wrote_fix && o_.exit_non_zero_on_fix) ? kExitFindings
                                                                                              : kExitClean;
    if (text_output()) {
      for (const auto& n : notes) out_ << "warning: " << printable_text(n) << "\n";
      if (o_.statistics) print_statistics();
    } else {
      RunInfo info;
      info.tool_version = BPULINT_VERSION;
      info.platform = models_.front().plan.platform;
      info.exit_code = code;
      info.show_waived = o_.show_waived;
      info.min_severity = o_.min_severity;
      info.configuration_notes = notes;
      info.hb_config = o_.hb_config;
      if (o_.statistics) info.statistics = statistics();
      info.with_statistics = o_.statistics;
      if (format_->relative_uris) info.sarif_root = sarif_source_root();
      for (const auto& m : models_) {
        for (const auto& kv : m.plan.levels.severity) info.severity_overrides[kv.first] = kv.second;
      }
      for (const auto& m : models_) {
        RunInfo::Model im;
        im.path = m.path;
        im.platform = m.plan.platform;
        if (m.report->ok) im.report = m.report.get();
        else im.error = m.report->error;
        im.fix_run = m.fix_run.get();
        im.fixed = m.fixed.get();
        info.models.push_back(im);
      }
      out_ << format_->render(info, o_.sarif_profile == "spec" ? SarifProfile::Spec : SarifProfile::GitHub);
      for (const auto& n : notes) std::cerr << "bpu-lint: warning: " << n << "\n";
    }
    if (!o_.write_baseline.empty()) {
      std::vector<const ModelReport*> reports;
      for (const auto& m : models_) {
        if (m.report->ok) reports.push_back(m.report.get());
      }
      std::string error;
      if (!write_output(o_.write_baseline, baseline_text(reports, o_.write_baseline), model_paths(), error)) {
        std::cerr << o_.write_baseline << ": error: " << error << "\n";
        return kExitError;
      }
      std::cerr << "bpu-lint: wrote the baseline " << o_.write_baseline << "\n";
    }
    if (!o_.output_file.empty()) {
      std::string error;
      if (!write_output(o_.output_file, buffer_.str(), model_paths(), error)) {
        std::cerr << o_.output_file << ": error: " << error << "\n";
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
  CommandLineSettings cli_;
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
