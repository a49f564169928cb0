// fuzz_hb_config: bytes as a Horizon compile config (hb_mapper makertbin /
// hb_compile YAML) through parse_hb_config. Must never crash, hang or leak.
// Invariants: a failure says why on one line, naming the file; a success
// holds positive dims only, one listed name per pinned input, and a model
// path resolved against the config's folder; every node entry (node_info,
// run_on_*) is named and says where its placement came from. The config
// fixes' writer (fix_hb_config_text) on a config that parses: a node_info
// entry added and one changed either succeed and re-read with both as set
// (it proves that itself; checked here again) or fail on one line.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bpulint/lint/hb_config.h"
#include "bpulint/lint/hb_config_writer.h"
#include "fuzz_util.h"

using namespace bpulint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "configs/hb_compile.yaml";
  HbConfig config;
  std::string error;
  if (!parse_hb_config(text, path, config, error)) {
    FUZZ_CHECK(!error.empty(), "parse_hb_config failed without a message");
    FUZZ_CHECK(error.rfind(path + ":", 0) == 0, "the error does not name the file: " + error);
    FUZZ_CHECK(error.find('\n') == std::string::npos, "multi-line error: " + error);
    return 0;
  }
  FUZZ_CHECK(config.path == path, "the path changed");
  FUZZ_CHECK(config.input_order.size() == config.input_shapes.size(), "listed inputs and pins differ");
  for (const auto& [name, dims] : config.input_shapes) {
    FUZZ_CHECK(!dims.empty(), "a pin without dims for '" + name + "'");
    for (int64_t d : dims) FUZZ_CHECK(d > 0, "a dim that is not positive");
  }
  if (!config.model.empty() && config.model[0] != '/') {
    FUZZ_CHECK(config.model.rfind("configs/", 0) == 0, "a relative onnx_model not resolved against the folder");
  }
  for (const auto& [name, node] : config.nodes) {
    FUZZ_CHECK(!name.empty(), "a node entry without a name");
    FUZZ_CHECK(node.on.empty() == node.from.empty(), "a placement without its key, or a key without placement");
  }
  (void)hb_config_summary(config);

  std::vector<ConfigEdit> edits = {node_on_bpu_edit("/model.10/m/m.0/attn/Softmax", "int8")};
  if (!config.nodes.empty()) edits.push_back({config.nodes.begin()->first, {{"OutputType", "int16"}}});
  std::string fixed;
  if (!fix_hb_config_text(text, path, edits, fixed, error)) {
    FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos, "the config writer failed without one line");
    return 0;
  }
  HbConfig again;
  FUZZ_CHECK(parse_hb_config(fixed, path, again, error), "the fixed config does not re-read: " + error);
  FUZZ_CHECK(again.nodes["/model.10/m/m.0/attn/Softmax"].on == "BPU", "the added entry is not read back");
  FUZZ_CHECK(again.input_shapes == config.input_shapes && again.march == config.march, "the fix changed other keys");
  return 0;
}
