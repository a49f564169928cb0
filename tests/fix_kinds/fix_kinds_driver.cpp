// A developer and test driver for the two fix kinds of issue 43 until the
// command line calls them (no CLI flag yet): lints a model with the real
// pipeline, then plans, proves and writes the host split, or converts the
// opset. Prints one JSON object; exit 0 written, 3 does not apply /
// refused, 2 bad input.
//
//   fix_kinds_driver split MODEL PLATFORM BPU_OUT HOST_OUT
//   fix_kinds_driver opset MODEL TARGET OUT
#include <sys/resource.h>

#include <iostream>
#include <string>

#include "bpulint/lint/lint.h"
#include "bpulint/lint/settings.h"
#include "bpulint/rules/rule_db.h"
#include "host-split/host_split.h"
#include "opset-down/opset_down.h"

namespace {

using namespace bpulint;

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quoted(v[i]);
  return out + "]";
}

int split(const std::string& model, const std::string& platform_name, const std::string& bpu, const std::string& host) {
  RuleDatabase db;
  std::string error;
  if (!load_default_rule_database("", db, error)) {
    std::cerr << "fix_kinds_driver: error: " << error << "\n";
    return 2;
  }
  const Platform* platform = resolve_platform(db, platform_name, "", error);
  if (platform == nullptr) {
    std::cerr << "fix_kinds_driver: error: " << error << "\n";
    return 2;
  }
  ModelReport r = lint(model, ModelPlan::defaults(*platform));
  if (!r.ok) {
    std::cerr << model << ": error: " << r.error << "\n";
    return 2;
  }
  HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
  std::cout << "{\"applies\": " << (plan.applies ? "true" : "false") << ", \"reason\": " << quoted(plan.reason)
            << ", \"nodes\": " << r.loaded->model->graph().node_size() << ", \"head_nodes\": " << plan.head_node_count
            << ", \"head_bpu\": " << plan.head_bpu << ", \"head_cpu\": " << plan.head_cpu
            << ", \"head_unknown\": " << plan.head_unknown << ", \"tail_nodes\": " << plan.tail_nodes.size()
            << ", \"tail_cpu\": " << plan.tail_cpu << ", \"tail_unknown\": " << plan.tail_unknown
            << ", \"tail_bpu\": " << plan.tail_bpu
            << ", \"frontier\": " << list(plan.frontier) << ", \"frontier_graph_inputs\": " << plan.frontier_graph_inputs
            << ", \"constants\": " << plan.constants.size()
            << ", \"head_outputs\": " << list(plan.head_outputs) << ", \"tail_outputs\": " << list(plan.tail_outputs);
  if (!plan.applies) {
    std::cout << "}\n";
    return 3;
  }
  const bool written = write_host_split(*r.loaded, plan, {bpu, host}, error);
  std::cout << ", \"written\": " << (written ? "true" : "false") << ", \"error\": " << quoted(error)
            << ", \"peak_rss_kib\": " << peak_rss_kib() << "}\n";
  return written ? 0 : 2;
}

int opset(const std::string& model, const std::string& target, const std::string& out) {
  ModelRead read = read_model(model);
  if (read.model == nullptr) {
    std::cerr << model << ": error: " << read.error << "\n";
    return 2;
  }
  const long before = peak_rss_kib();
  OpsetConversion c = convert_opset(*read.model->model, std::stoll(target),
                                    read.model->folder.empty() ? "." : read.model->folder);
  const long during = peak_rss_kib();
  std::string error;
  const bool written = c.ok && c.changed && write_opset_conversion(*read.model, c, out, error);
  std::cout << "{\"ok\": " << (c.ok ? "true" : "false") << ", \"changed\": " << (c.changed ? "true" : "false")
            << ", \"from\": " << c.from << ", \"to\": " << c.to << ", \"reason\": " << quoted(c.reason)
            << ", \"blocking_op\": " << quoted(c.blocking_op) << ", \"nodes_before\": " << c.nodes_before
            << ", \"nodes_after\": " << c.nodes_after << ", \"weights_set_aside\": " << c.weights_set_aside
            << ", \"seconds\": " << c.seconds << ", \"file_bytes\": " << read.model->file_size
            << ", \"rss_before_kib\": " << before << ", \"peak_rss_kib\": " << during
            << ", \"written\": " << (written ? "true" : "false") << ", \"error\": " << quoted(error) << "}\n";
  if (!c.ok) return 3;
  return written || !c.changed ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "split" && argc == 6) return split(argv[2], argv[3], argv[4], argv[5]);
  if (what == "opset" && argc == 5) return opset(argv[2], argv[3], argv[4]);
  std::cerr << "usage: fix_kinds_driver split MODEL PLATFORM BPU_OUT HOST_OUT | opset MODEL TARGET OUT\n";
  return 2;
}
