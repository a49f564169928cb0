#include "bpulint/cli/cli.h"
#include "bpulint/base/io_plan.h"
#include "bpulint/base/strings.h"
#include "bpulint/model/model_checker.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "bpulint/render/markup.h"
#include "bpulint/rules/builtin_rules.h"
#include "bpulint/rules/embedded_rules.h"
#include "bpulint/lint/config.h"
#include "calibrate_run.h"
#include "compare_run.h"
#include "bpulint/fix/fix_catalog.h"
#include "bpulint/fix/config_fix.h"
#include "bpulint/lint/hb_config.h"
#include "lint_run.h"
#include "bpulint/base/output_file.h"
#include "bpulint/render/output_formats.h"
#include "bpulint/render/rule_docs.h"
#include "bpulint/lint/settings.h"

namespace bpulint {
namespace {



bool env_set(const char* name) {  // present and not empty, as no-color.org and force-color.org read it
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// --color auto: FORCE_COLOR turns colour on, NO_COLOR off (FORCE_COLOR wins,
// being the more specific request); otherwise a terminal that is not "dumb".
bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (env_set("FORCE_COLOR")) return true;
  if (env_set("NO_COLOR")) return false;
  const char* term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) != 0 && !(term != nullptr && std::string(term) == "dumb");
}

// NAME=1x128x2x6x6; the last '=' splits so names may contain '='.
bool parse_input_shape(const std::string& spec, FactOptions& options, std::string& error) {
  const auto eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    error = "--input-shape '" + spec + "': expected NAME=DIMxDIMx... (e.g. input=1x3x224x224)";
    return false;
  }
  std::vector<int64_t> dims;
  if (!parse_dims(spec.substr(eq + 1), dims, error)) {
    error = "--input-shape '" + spec + "': " + error;
    return false;
  }
  options.input_shapes[spec.substr(0, eq)] = dims;
  options.pin_sources[spec.substr(0, eq)] = "--input-shape";
  return true;
}

// Every --input-shape of a command, or the first one's error on stderr.
bool parse_input_shapes(const std::vector<std::string>& specs, FactOptions& options) {
  for (const auto& spec : specs) {
    std::string error;
    if (!parse_input_shape(spec, options, error)) {
      std::cerr << "bpu-lint: error: " << printable_text(error) << "\n";
      return false;
    }
  }
  return true;
}

bool load_db(const std::string& rules_dir, RuleDatabase& db) {
  std::string error;
  if (!load_default_rule_database(rules_dir, db, error)) {
    std::cerr << "bpu-lint: error: " << printable_text(error) << "\n";
    return false;
  }
  return true;
}

const Platform* pick_platform(const RuleDatabase& db, const std::string& name) {
  std::string error;
  const Platform* p = resolve_platform(db, name, "", error);
  if (p == nullptr) std::cerr << "bpu-lint: error: " << printable_text(error) << "\n";
  return p;
}

// A document bpu-lint composed for people (the markdown listings), each line
// through printable_text: a --rules-dir's text can break no line and send no
// control or bidi character, and no line starts with "::".
std::string printable_lines(const std::string& text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    out += printable_text(std::string_view(text).substr(at, end - at));
    if (newline) out += '\n';
    at = end + 1;
  }
  return out;
}

// "auto" and every registered fix kind: the catalog is the one list of fixes.
std::vector<std::string> fix_strategies() {
  std::vector<std::string> ids = {"auto"};
  for (const auto& k : fix_catalog()) ids.push_back(k.id);
  return ids;
}

int cmd_platforms(const RuleDatabase& db, const std::string& format) {
  if (format == "markdown") {
    std::cout << printable_lines(docs_index_markdown(db));
    return kExitClean;
  }
  for (const auto& p : db.platforms) {
    // A --rules-dir's platform files say these: cleaned like every other string from a file.
    std::cout << printable_text(p.name) << "  march " << printable_text(p.march) << "  aliases: "
              << printable_text(join(p.aliases)) << "\n    " << printable_text(p.description) << "\n    " << p.rules.size()
              << " rules, " << p.ops.size() << " classified ops (" << printable_text(p.file) << ")\n";
  }
  return kExitClean;
}

int cmd_rules(const Platform& p, const std::string& format) {
  if (format == "markdown") std::cout << printable_lines(rules_markdown(p));
  else if (format == "json") std::cout << rules_json(p);
  else std::cout << rules_text(p);
  return kExitClean;
}

int cmd_validate(const std::vector<std::string>& files) {
  const std::vector<std::string> problems = validate_rule_files(files);
  for (const auto& p : problems) std::cerr << printable_text(p) << "\n";
  if (problems.empty()) std::cout << "bpu-lint: rule files valid\n";
  return problems.empty() ? kExitClean : kExitError;
}

// The user rule files of --rules and of the configuration (given, or found
// from the current folder up), added to the database.
bool add_user_rules(RuleDatabase& db, const std::vector<std::string>& rules, const std::string& config_file) {
  std::vector<std::string> paths = rules;
  const std::string config_path = !config_file.empty() ? config_file : find_config("./.");
  std::string error;
  if (!config_path.empty()) {
    Config config;
    if (!load_config(config_path, config, error)) {
      std::cerr << "bpu-lint: error: " << printable_text(error) << "\n";
      return false;
    }
    paths.insert(paths.end(), config.rule_paths.begin(), config.rule_paths.end());
  }
  std::vector<RuleFile> files;
  if (!paths.empty() && (!read_rule_paths(paths, files, error) || !extend_rule_database(db, files, error))) {
    std::cerr << "bpu-lint: error: " << printable_text(error) << "\n";
    return false;
  }
  return true;
}

int cmd_explain(const RuleDatabase& db, const std::string& id) {
  if (const FixKind* fix = find_fix_kind(id)) {
    std::cout << fix->id << ": " << fix->title << " (" << applicability_name(fix->applicability) << ")\n\n";
    if (fix->layer != nullptr) {
      std::cout << "PyTorch replacement (build it from the original nn.ConvTranspose3d):\n\n"
                << "import torch\nfrom torch import nn\n\n" << fix->layer->torch_source;
    } else {
      std::set<std::string> offering;  // rule ids, over every platform
      for (const auto& p : db.platforms) {
        for (const auto& r : p.rules) {
          if (std::find(r.fixes.begin(), r.fixes.end(), id) != r.fixes.end()) offering.insert(r.id);
        }
      }
      std::string rules;
      for (const auto& r : offering) rules += (rules.empty() ? "" : ", ") + r;
      if (fix->model != nullptr) {
        std::cout << "A model fix: `bpu-lint MODEL --fix` applies it after any layer rewrite, on the model as that left\n"
                  << "it, proves the result before writing, then re-lints what it wrote.\n\n"
                  << "Writes: " << fix->model->writes << "\n"
                  << "Offered by: "
                  << (rules.empty() ? "any finding on the nodes it moves (no rule names it)" : rules) << "\n"
                  << "Evidence: " << fix->model->evidence << "\n";
        return kExitClean;
      }
      std::cout << "A compile-config fix: the model is not changed. `bpu-lint MODEL --hb-config CONFIG --fix` writes a\n"
                << "copy of CONFIG (--fixed-config, default <config stem>.fixed.yaml) with the node_info entries it adds,\n"
                << "every other line as it was, proven by reading the copy back; the re-lint uses the copy.\n\n"
                << "Offered by: " << (rules.empty() ? "no built-in rule" : rules) << "\n"
                << "Evidence: " << fix->config->evidence << "\n";
    }
    return kExitClean;
  }
  for (const auto& r : builtin_rules()) {
    if (r.id == id || r.name == id) {
      std::cout << explain_text(r, {});
      return kExitClean;
    }
  }
  const Rule* found = nullptr;
  std::vector<std::string> platforms;
  for (const auto& p : db.platforms) {
    for (const auto& r : p.rules) {
      if (r.id == id || r.name == id) {
        if (found == nullptr) found = &r;
        platforms.push_back(p.name);
      }
    }
  }
  if (found == nullptr) {
    std::cerr << "bpu-lint: no rule '" << printable_text(id) << "' (see: bpu-lint rules)\n";
    return kExitError;
  }
  std::cout << explain_text(*found, platforms);
  return kExitClean;
}

// Outputs the policy refuses fail before any linting (stat only, nothing
// opened); the writers check again when they write. Standard output carries
// one document: the report, unless -o names a file.
bool outputs_acceptable(RunOptions& run) {
  if (run.output_file == "-") run.output_file.clear();
  std::vector<std::string> to_stdout;
  if (run.output_file.empty()) to_stdout.push_back("the report");
  if (run.write_baseline == "-") to_stdout.push_back("--write-baseline -");
  if (run.pytorch_snippet == "-") to_stdout.push_back("--pytorch-snippet -");
  if (to_stdout.size() > 1) {
    std::cerr << "bpu-lint: error: " << join(to_stdout, " and ") << " would share standard output; send the report to a file "
              << "with -o FILE\n";
    return false;
  }
  struct Output {
    const std::string* path;
    OutputUse use;
    const char* role;
  };
  const Output outputs[] = {{&run.output_file, OutputUse::Text, "the report (-o)"},
                            {&run.write_baseline, OutputUse::Text, kBaselineWriteRole},
                            {&run.pytorch_snippet, OutputUse::Text, "the PyTorch snippet (--pytorch-snippet)"},
                            {&run.fixed_model, OutputUse::Model, kFixedModelRole},
                            {&run.fixed_config, OutputUse::Text, "the fixed compile config (--fixed-config)"}};
  // The fixed compile config is never the config it copies, as no output is an input model.
  std::vector<std::string> config_inputs = run.inputs;
  if (run.hb_config != nullptr) config_inputs.push_back(run.hb_config->path);
  for (const auto& [path, use, role] : outputs) {
    OutputTarget target;
    std::string error;
    if (path->empty()) continue;
    if (!resolve_output(*path, use, path == &run.fixed_config ? config_inputs : run.inputs, target, error)) {
      std::cerr << "bpu-lint: error: " << printable_text(error) << "\n";
      return false;
    }
    if (*path != "-" && !plan_write(*path, role, error)) {
      std::cerr << "bpu-lint: error: " << printable_text(*path + ": " + error) << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace

int run_cli(int argc, char** argv) {
  start_io_plan();
  CLI::App app{"bpu-lint: which ONNX nodes will fall off a Horizon BPU, and why"};
  const OnnxLibrary& onnx = onnx_library();
  app.set_version_flag("--version", std::string("bpu-lint ") + BPULINT_VERSION + " (rules sha256 " +
                                         embedded_rules_sha256() + "; ONNX " + onnx.version + ": opset <= " +
                                         std::to_string(onnx.opset) + ", IR <= " + std::to_string(onnx.ir_version) +
                                         ")");

  RunOptions run;
  std::string color = "auto";
  std::vector<std::string> input_shapes, select, ignore;

  app.add_option("models", run.inputs,
                 "ONNX model files, or folders searched for *.onnx (not inside hidden folders, venv or node_modules, "
                 "nor what .gitignore, .ignore or the configuration's exclude: leave out); "
                 "- reads one from standard input");
  app.add_option("--exclude", run.excludes,
                 "Leave out of folder walks what matches this glob (the path below the folder, '*' crossing '/', or the name; repeatable)");
  app.add_option("-p,--platform", run.platform, "Platform name, march or alias (default: the configuration's, else j6p)");
  app.add_option("--format", run.format, "Output format")
      ->check(CLI::IsMember(output_format_names()));
  app.add_option("--sarif-profile", run.sarif_profile,
                 "github (default: file locations without regions, what code scanning ingests) or spec "
                 "(byte regions of each node in the binary file)")
      ->check(CLI::IsMember({"github", "spec"}));
  app.add_option("-o,--output", run.output_file,
                 "Write the report to this file (atomically) instead of stdout; '-' is stdout");
  app.add_option("--color", color, "Colour: auto (terminal only), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--input-shape", input_shapes, "Pin a dynamic input: NAME=1x128x2x6x6 (repeatable)")
      ->allow_extra_args(false);
  app.add_flag("--exit-zero", run.exit_zero, "Exit 0 even when errors are found (2 still means broken input)");
  app.add_flag("--fix", run.fix, "Apply the fixes (rewrite, prove numerically, write, re-lint)");
  app.add_flag("--exit-non-zero-on-fix", run.exit_non_zero_on_fix,
               "With --fix: exit 1 when a fixed model was written, so a pre-commit hook stops for the author to "
               "review and stage it");
  app.add_option("--fix-strategy", run.fix_strategy, "auto (each node's recommended fix) or a fix id")
      ->check(CLI::IsMember(fix_strategies()));
  app.add_option("--fixed-model", run.fixed_model, "Where --fix writes (default: <stem>.fixed.onnx beside the input)");
  app.add_option("--fixed-config", run.fixed_config,
                 "Where --fix writes the compile config with its config fixes (default: <config stem>.fixed.yaml beside "
                 "the fixed model); needs --hb-config");
  app.add_flag("--external-data", run.external_data,
               "With --fix: write the weights to <fixed>.data beside the model (automatic above 2 GiB)");
  app.add_option("--pytorch-snippet", run.pytorch_snippet,
                 "Write nn.Module replacements for the fixable layers (PyTorch source) to this file");
  app.add_option("--rules-dir", run.rules_dir, "Load rule files from this folder instead of the built-in database");
  app.add_option("--rules", run.extra_rules, "Extra rule files or folders extending the database (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--config", run.config_file, "Configuration file (default: the nearest .bpu-lint.yaml up the tree)");
  std::string hb_config_path;
  app.add_option("--hb-config", hb_config_path,
                 "Lint with the march and input shapes of a Horizon compile config (the YAML of hb_mapper makertbin "
                 "or hb_compile); its onnx_model when no model is given");
  app.add_option("--source-root", run.source_root,
                 "Where the PyTorch sources named by the model's stack traces live (default: the current folder); "
                 "findings then point at the line that built the node")
      ->type_name("DIR");
  app.add_flag("--isolated", run.isolated, "Ignore configuration files");
  auto* select_opt = app.add_option("--select", select, "Only these rule ids or prefixes (overrides the configuration)")
                         ->delimiter(',')
                         ->allow_extra_args(false);
  auto* ignore_opt = app.add_option("--ignore", ignore, "Skip these rule ids or prefixes (overrides the configuration)")
                         ->delimiter(',')
                         ->allow_extra_args(false);
  app.add_flag("--show-waived", run.show_waived, "Also list waived and baselined findings");
  std::string min_severity = "note";
  app.add_option("--min-severity", min_severity,
                 "List only findings at or above this level: note (default), warning or error (the summary "
                 "still counts everything)")
      ->check(CLI::IsMember({"note", "warning", "error"}));
  app.add_flag("--show-unverified", run.show_unverified,
               "Also list each rule check that could not be verified (by default they are counted in one note "
               "per root cause: the dynamic input to pin, the node where inference failed)");
  app.add_flag("--statistics", run.statistics, "Count findings per rule (text formats)");
  app.add_option("--baseline", run.baseline, "Report only findings not in this baseline file");
  app.add_option("--write-baseline", run.write_baseline, "Record the current findings as a baseline file");
  // A folder of models is linted on every core unless told otherwise.
  run.jobs = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 256));
  app.add_option("-j,--jobs", run.jobs, "Lint this many models in parallel (default: the number of cores)")
      ->check(CLI::Range(1, 256));

  auto* rules_cmd = app.add_subcommand("rules", "List a platform's rules and op classes");
  std::string rules_platform = kDefaultPlatform;
  std::string rules_format = "text";
  rules_cmd->add_option("-p,--platform", rules_platform, "Platform name or march");
  rules_cmd->add_option("--format", rules_format, "text, markdown (the docs/ pages) or json")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  rules_cmd->add_option("--rules-dir", run.rules_dir, "Rule folder");
  // `rules list` is what users of subcommand CLIs type first; its options are the listing's.
  rules_cmd->add_subcommand("list", "The same listing as `bpu-lint rules`")->fallthrough();
  auto* validate_cmd = rules_cmd->add_subcommand("validate", "Check rule files (yours or the database's)");
  std::vector<std::string> validate_files;
  validate_cmd->add_option("files", validate_files, "Rule files or folders")->required();
  auto* explain_cmd = app.add_subcommand("explain", "Show a rule's constraint, rationale, source, status and fixes");
  std::string explain_id;
  explain_cmd->add_option("rule", explain_id, "Rule id or name, or a fix id")->required();
  explain_cmd->add_option("--rules-dir", run.rules_dir, "Rule folder");
  std::vector<std::string> explain_rules;
  std::string explain_config;
  explain_cmd->add_option("--rules", explain_rules, "Your rule files or folders (as for linting)")->allow_extra_args(false);
  explain_cmd->add_option("--config", explain_config,
                          "Configuration whose `rules:` to include (default: the nearest .bpu-lint.yaml from here up)");
  auto* platforms_cmd = app.add_subcommand("platforms", "List the platforms in the database");
  std::string platforms_format = "text";
  platforms_cmd->add_option("--format", platforms_format, "text or markdown (docs/README.md)")
      ->check(CLI::IsMember({"text", "markdown"}));
  platforms_cmd->add_option("--rules-dir", run.rules_dir, "Rule folder");
  auto* compare_cmd = app.add_subcommand(
      "compare", "Check the predictions against a compiler's placement log (hb_mapper or hb_compile)");
  CompareOptions compare;
  std::vector<std::string> compare_shapes;
  compare_cmd->add_option("model", compare.model, "The ONNX model that was compiled")->required();
  compare_cmd->add_option("log", compare.log, "The hb_mapper makertbin/checker or hb_compile log")->required();
  compare_cmd->add_option("-p,--platform", compare.platform, "Platform name, march or alias (default: the log's march)");
  compare_cmd->add_option("--format", compare.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  compare_cmd->add_option("--input-shape", compare_shapes, "Pin a dynamic input: NAME=1x3x224x224 (repeatable)")
      ->allow_extra_args(false);
  compare_cmd->add_option("--rules-dir", compare.rules_dir, "Rule folder");
  compare_cmd->add_option("--hb-config", compare.hb_config,
                          "The compile config the log was made with: its planned CPU nodes (node_info, run_on_cpu) agree");
  compare_cmd->add_option("--rules", compare.extra_rules, "Extra rule files or folders extending the database (repeatable)")
      ->allow_extra_args(false);
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate", "Write a rule file that makes compare agree with your compiler's logs (MODEL LOG pairs)");
  CalibrateOptions calibrate;
  std::vector<std::string> calibrate_shapes;
  calibrate_cmd->add_option("pairs", calibrate.pairs, "MODEL LOG [MODEL LOG ...]: each model and its compile log")
      ->required();
  calibrate_cmd->add_option("-o,--output", calibrate.output, "The rule file to write (extends the platform)")->required();
  calibrate_cmd->add_option("-p,--platform", calibrate.platform, "Platform name, march or alias (default: the logs' march)");
  calibrate_cmd->add_option("--input-shape", calibrate_shapes, "Pin a dynamic input: NAME=1x3x224x224 (repeatable)")
      ->allow_extra_args(false);
  calibrate_cmd->add_option("--rules-dir", calibrate.rules_dir, "Rule folder");
  calibrate_cmd->add_option("--rules", calibrate.extra_rules, "Your rule files or folders, calibrated on top of (repeatable)")
      ->allow_extra_args(false);
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's message quotes the argument it refused, as the user (or a script) typed it.
    std::cerr << "bpu-lint: error: " << printable_text(e.what()) << " (see: bpu-lint --help)\n";
    return kExitError;
  }

  if (*validate_cmd) return cmd_validate(validate_files);
  if (*compare_cmd) {
    return parse_input_shapes(compare_shapes, compare.facts) ? run_compare(compare) : kExitError;
  }
  if (*calibrate_cmd) {
    return parse_input_shapes(calibrate_shapes, calibrate.facts) ? run_calibrate(calibrate) : kExitError;
  }
  if (*platforms_cmd || *explain_cmd || *rules_cmd) {
    RuleDatabase db;
    if (!load_db(run.rules_dir, db)) return kExitError;
    // explain finds a team's own rules too: --rules, and the configuration's `rules:`.
    if (*explain_cmd && !add_user_rules(db, explain_rules, explain_config)) return kExitError;
    if (*platforms_cmd) return cmd_platforms(db, platforms_format);
    if (*explain_cmd) return cmd_explain(db, explain_id);
    const Platform* platform = pick_platform(db, rules_platform);
    return platform == nullptr ? kExitError : cmd_rules(*platform, rules_format);
  }

  if (!parse_input_shapes(input_shapes, run.facts)) return kExitError;
  HbConfig hb_config;
  if (!hb_config_path.empty()) {
    std::string error;
    if (!load_hb_config(hb_config_path, hb_config, error)) {
      std::cerr << "bpu-lint: error: " << printable_text(error) << "\n";
      return kExitError;
    }
    if (run.inputs.empty()) {
      if (hb_config.model.empty()) {
        std::cerr << "bpu-lint: error: " << printable_text(hb_config_path)
                  << ": no model_parameters.onnx_model; give the model on the command line\n";
        return kExitError;
      }
      run.inputs.push_back(hb_config.model);
    }
    run.hb_config = &hb_config;
  }
  if (!run.fixed_model.empty() && !run.fix) {
    std::cerr << "bpu-lint: error: --fixed-model needs --fix\n";
    return kExitError;
  }
  if (!run.fixed_config.empty() && (!run.fix || run.hb_config == nullptr)) {
    std::cerr << "bpu-lint: error: --fixed-config needs --fix and --hb-config (the config it copies)\n";
    return kExitError;
  }
  if (!outputs_acceptable(run)) return kExitError;
  if (*select_opt) run.select = select;
  if (*ignore_opt) run.ignore = ignore;
  run.color = use_color(color);
  parse_severity(min_severity, &run.min_severity);
  return run_lint(run);
}

}  // namespace bpulint
