#include "calibrate_run.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "bpulint/compare/calibrate.h"
#include "bpulint/compare/compare.h"
#include "bpulint/base/exit_codes.h"
#include "bpulint/base/io_plan.h"
#include "bpulint/lint/lint.h"
#include "bpulint/render/markup.h"
#include "bpulint/base/output_file.h"
#include "bpulint/base/strings.h"
#include "compare_run.h"

namespace bpulint {
namespace {

struct Compared {
  std::unique_ptr<ModelReport> report;
  Comparison comparison;
};

bool compare_all(const CalibrateOptions& o, const Platform& platform, const std::vector<CompileLog>& logs,
                 std::vector<Compared>& out) {
  out.clear();
  for (size_t i = 0; i < logs.size(); ++i) {
    const std::string& model = o.pairs[2 * i];
    auto report = std::make_unique<ModelReport>(lint(model, ModelPlan::defaults(platform, o.facts)));
    if (!report->ok) return command_error(model, report->error), false;
    Comparison c = compare_placement(*report, logs[i]);
    out.push_back({std::move(report), std::move(c)});
  }
  return true;
}

std::string agreement(const Comparison& c) {
  return std::to_string(c.agree.size()) + " of " + std::to_string(c.matched) + " matched nodes agree (" +
         std::to_string(c.missed.size()) + " missed, " + std::to_string(c.wrong.size()) + " wrong, " +
         std::to_string(c.unknown.size()) + " unknown)";
}

int calibrate_pairs(const CalibrateOptions& o, const std::string& command) {
  if (o.pairs.size() < 2 || o.pairs.size() % 2 != 0) {
    return command_error("bpu-lint", "calibrate takes pairs: MODEL LOG [MODEL LOG ...] (got " + std::to_string(o.pairs.size()) +
                                " path" + (o.pairs.size() == 1 ? "" : "s") + ")");
  }
  if (o.output.empty()) return command_error("bpu-lint", "calibrate needs -o FILE: the rule file to write");
  std::vector<std::string> inputs;
  for (size_t i = 0; i < o.pairs.size(); i += 2) inputs.push_back(o.pairs[i]);
  OutputTarget target;
  std::string error;
  if (!resolve_output(o.output, OutputUse::Text, inputs, target, error)) return command_error(o.output, error);
  if (o.output != "-" && !plan_write(o.output, "the calibrated rule file (-o)", error)) return command_error(o.output, error);
  // The file is written from the pairs alone: replacing a log or a rule file
  // it was given would lose it.
  for (size_t i = 0; i < o.pairs.size() + o.extra_rules.size(); ++i) {
    const std::string& in = i < o.pairs.size() ? o.pairs[i] : o.extra_rules[i - o.pairs.size()];
    std::error_code ec;
    if (o.output != "-" && std::filesystem::equivalent(in, o.output, ec)) {
      return command_error(o.output, std::string("is also an input (") + (i < o.pairs.size() ? "a model or log" : "a --rules file") +
                                "); calibrate writes a new file: write it elsewhere, compare, then replace");
    }
  }

  RuleDatabase db;
  if (!load_compare_rules(o.rules_dir, o.extra_rules, {}, db)) return kExitError;
  std::vector<CompileLog> logs(o.pairs.size() / 2);
  const Platform* platform = nullptr;
  for (size_t i = 0; i < logs.size(); ++i) {
    const std::string& log = o.pairs[2 * i + 1];
    if (!read_compile_log(log, logs[i], error)) return command_error(log, error);
    const Platform* p = log_platform(o.platform, log, db, logs[i]);
    if (p == nullptr) return kExitError;
    if (platform != nullptr && p != platform) {
      return command_error(log, "is a " + p->name + " log, the ones before it " + platform->name +
                           "; one rule file calibrates one platform (calibrate each apart, or choose one with --platform)");
    }
    platform = p;
  }
  std::vector<Compared> before;
  if (!compare_all(o, *platform, logs, before)) return kExitError;

  std::vector<CalibrationPair> pairs;
  for (size_t i = 0; i < logs.size(); ++i) {
    pairs.push_back({o.pairs[2 * i], o.pairs[2 * i + 1], before[i].report.get(), &logs[i], &before[i].comparison});
  }
  const Calibration cal = calibrate(*platform, pairs, command);

  // The file must load, and compare is run again with it to say what it does.
  RuleDatabase checked;
  const std::string file_name = o.output == "-" ? "<calibrated rules>" : o.output;
  if (!load_compare_rules(o.rules_dir, o.extra_rules, {}, checked)) return kExitError;
  if (!extend_rule_database(checked, {{file_name, cal.yaml}}, error)) {
    return command_error("bpu-lint", "internal error: the rule file calibrate wrote does not load, nothing written: " + error);
  }
  const Platform* calibrated = checked.find(platform->name);
  std::vector<Compared> after;
  if (calibrated == nullptr || !compare_all(o, *calibrated, logs, after)) return kExitError;

  if (!write_output(o.output, cal.yaml, inputs, error)) return command_error(o.output, error);

  std::ostream& out = o.output == "-" ? std::cerr : std::cout;
  out << "bpu-lint calibrate: " << logs.size() << (logs.size() == 1 ? " pair" : " pairs") << " on "
      << printable_text(platform->name) << " (march " << printable_text(platform->march) << ")\n";
  bool all_agree = true;
  for (size_t i = 0; i < logs.size(); ++i) {
    const std::vector<std::string>& marches = logs[i].marches;
    if (!marches.empty() && std::find(marches.begin(), marches.end(), platform->march) == marches.end()) {
      out << "  note: " << printable_text(o.pairs[2 * i + 1]) << " is for march " << printable_text(join(marches))
          << ", the rules for " << printable_text(platform->name) << " (--platform)\n";
    }
    out << "  " << printable_text(o.pairs[2 * i]) << " with " << printable_text(o.pairs[2 * i + 1]) << ": "
        << agreement(before[i].comparison) << "; with the file: " << agreement(after[i].comparison) << "\n";
    all_agree = all_agree && after[i].comparison.all_agree();
  }
  out << "wrote " << printable_text(o.output == "-" ? "standard output" : o.output) << ": "
      << cal.op_classes.size() << " op class" << (cal.op_classes.size() == 1 ? "" : "es")
      << (cal.op_classes.empty() ? "" : " (" + printable_text(join(cal.op_classes)) + ")") << ", " << cal.rules.size()
      << (cal.rules.size() == 1 ? " rule" : " rules") << (cal.rules.empty() ? "" : " (" + printable_text(join(cal.rules)) + ")")
      << ", " << cal.overrides.size() << " database rule" << (cal.overrides.size() == 1 ? "" : "s") << " narrowed"
      << (cal.overrides.empty() ? "" : " (" + printable_text(join(cal.overrides)) + ")") << "\n";
  if (!cal.leftovers.empty()) {
    out << "left for you (" << cal.leftovers.size() << ", listed in the file; `bpu-lint compare` prints a stub for each):\n";
    for (const auto& l : cal.leftovers) out << "  " << printable_text(l) << "\n";
  }
  out.flush();
  return all_agree ? kExitClean : kExitFindings;
}

}  // namespace

int run_calibrate(const CalibrateOptions& options) {
  std::string command = "bpu-lint calibrate";
  for (const auto& p : options.pairs) command += " " + p;
  if (!options.platform.empty()) command += " --platform " + options.platform;
  for (const auto& r : options.extra_rules) command += " --rules " + r;
  command += " -o " + options.output;
  try {
    return calibrate_pairs(options, command);
  } catch (const std::exception& e) {  // out of memory and the like: still one line, exit 2
    return command_error("bpu-lint", std::string("internal error: ") + e.what());
  }
}

}  // namespace bpulint
