// Where in the PyTorch source a node was built. PyTorch's torch.export-based
// exporter stamps each node with metadata_props (NodeProto field 9, newer than
// the ONNX 1.12 this builds against, so read from the wire when the library
// does not know the field); `pkg.torch.onnx.stack_trace` holds the Python
// frames that created the node, outermost first:
//   File "/home/a/proj/models/dec.py", line 12, in forward
//       return self.up1(x)
// The innermost frame whose file exists under the source root is the node's
// source line: that is the line a reviewer changes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class NodeProto;
}

namespace bpulint {

inline constexpr const char* kTorchStackTraceKey = "pkg.torch.onnx.stack_trace";

struct StackFrame {
  std::string file;      // as the exporting machine wrote it
  long line = 0;
  std::string function;  // "" when the frame does not say
  std::string code;      // the source line's text, trimmed; "" when absent
};

// The node's metadata_props (key, value), in order; empty when it has none.
std::vector<std::pair<std::string, std::string>> node_metadata(const onnx::NodeProto& node);

// The frames of a Python stack trace, outermost first. Lines that are not a
// `File "...", line N[, in F]` frame (or its code line) are skipped.
std::vector<StackFrame> parse_stack_trace(const std::string& text);

struct SourceLine {
  std::string path;      // the file under the source root, as a path from the working directory; "" = none found
  long line = 0;
  std::string function;
  std::string code;
  std::string trace_file;  // the frame's file as the trace wrote it
};

// Finds trace files under a source root. An absolute path from the exporting
// machine matches the file under the root with its longest trailing run of
// path components (/home/a/proj/models/dec.py -> models/dec.py); frames in
// installed packages (site-packages, dist-packages) never match. Lookups are
// cached, so each file is checked once per run.
class SourceResolver {
 public:
  explicit SourceResolver(std::string root);  // "" = the current directory
  // The node's source line: the innermost frame found under the root, else
  // the innermost frame with path "" (the trace names no file of this tree).
  // False when the node has no stack trace.
  bool locate(const onnx::NodeProto& node, SourceLine& out);
  // The path under the root of a trace's file; "" when none.
  std::string find(const std::string& trace_file);

 private:
  std::string root_;
  std::string prefix_;  // root as written before a relative path; "" for "."
  std::map<std::string, std::string> found_;
};

}  // namespace bpulint
