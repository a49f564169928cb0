// fuzz_source_location: bytes as a PyTorch stack trace and as a node's wire
// form, through parse_stack_trace, node_metadata and SourceResolver::locate.
// Must never crash, hang or leak. Invariants: every frame has a file, a line
// in [1, 1e9] and single-line fields; a trace stamped on a node (metadata
// field 9) reads back unchanged; a located node names a frame of its trace,
// and a root holding no files resolves none.
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "bpulint/model/source_location.h"
#include "ct3d_model.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto frames = parse_stack_trace(text);
  for (const auto& f : frames) {
    FUZZ_CHECK(!f.file.empty(), "a frame without a file");
    FUZZ_CHECK(f.line >= 1 && f.line <= 1000000000, "line out of range");
    FUZZ_CHECK(one_line(f.file) && one_line(f.function) && one_line(f.code), "a multi-line field");
  }

  // An empty folder as the root: nothing resolves, the fallback frame is one of the trace's.
  SourceResolver resolver(fuzz::temp_dir());
  onnx::NodeProto node;
  FUZZ_CHECK(models::add_metadata_prop(node, kTorchStackTraceKey, text), "a stamped node does not parse");
  const auto meta = node_metadata(node);
  FUZZ_CHECK(meta.size() == 1 && meta[0].second == text, "the stamped trace does not read back");
  SourceLine line;
  FUZZ_CHECK(resolver.locate(node, line) == !frames.empty(), "located without frames, or not with them");
  if (!frames.empty()) {
    FUZZ_CHECK(line.path.empty(), "resolved a file in an empty root: " + line.path);
    bool named = false;
    for (const auto& f : frames) named = named || (f.file == line.trace_file && f.line == line.line);
    FUZZ_CHECK(named, "the located frame is not in the trace");
  }

  // The bytes as a node's wire form: whatever metadata it holds reads without harm.
  onnx::NodeProto raw;
  if (raw.ParseFromString(text)) {
    (void)node_metadata(raw);
    (void)resolver.locate(raw, line);
  }
  return 0;
}
