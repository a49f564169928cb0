#include "model_run.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace bpulint {

CommandLineSettings command_line_settings(const RunOptions& o) {
  CommandLineSettings cli;
  cli.platform = o.platform;
  cli.select = o.select;
  cli.ignore = o.ignore;
  cli.input_shapes = o.facts.input_shapes;
  cli.hb_config = o.hb_config;
  cli.show_unverified = o.show_unverified;
  return cli;
}

bool load_setup(const std::string& config_path, const RunOptions& o, std::unique_ptr<Setup>& out, std::string& error) {
  auto setup = std::make_unique<Setup>();
  if (!config_path.empty() && !load_config(config_path, setup->config, error)) return false;
  if (!load_default_rule_database(o.rules_dir, setup->db, error)) return false;
  std::vector<std::string> extra = setup->config.rule_paths;
  extra.insert(extra.end(), o.extra_rules.begin(), o.extra_rules.end());
  std::vector<RuleFile> files;
  if (!extra.empty() && (!read_rule_paths(extra, files, error) || !extend_rule_database(setup->db, files, error))) {
    return false;
  }
  out = std::move(setup);
  return true;
}

void lint_models(std::vector<ModelRun>& models, int jobs, std::future<ModelRead>& first) {
  const size_t workers = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(1, jobs)), models.size()));
  max_known_opset();  // initialise ONNX's schema registry before threads share it
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < models.size(); i = next++) {
      auto& m = models[i];
      try {
        m.report = std::make_unique<ModelReport>(i == 0 && first.valid() ? lint(m.path, m.plan, first.get())
                                                                         : lint(m.path, m.plan, read_model(m.file)));
      } catch (const std::exception& e) {
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

}  // namespace bpulint
