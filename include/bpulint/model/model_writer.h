// Writing a model: atomically, by the output policy of output_file.h (a
// regular file only, never the input or its external data), self-contained:
// every payload the loader left on disk, and the source's own external data,
// is copied into the output (or its own .data file), file to file, one tensor
// at a time. The output never points into the source's files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "bpulint/model/model_loader.h"

namespace bpulint {

// A payload computed as it is written (a fix's weight laid out anew), so
// that one is held in memory at a time. Keyed by the tensor's name; the
// tensor is external, its length this one.
struct ComputedPayload {
  uint64_t length = 0;
  std::function<bool(std::string& bytes, std::string& error)> compute;
};
using ComputedPayloads = std::map<std::string, ComputedPayload>;

struct WriteOptions {
  // Weights go to <out>.data beside the model (ONNX external data) instead of
  // into it. Chosen automatically when the model would pass protobuf's 2 GiB.
  bool external_data = false;
  const ComputedPayloads* computed = nullptr;
};

struct WriteResult {
  bool external_data = false;
  std::string data_path;  // when external_data
};

// `model` is consumed: its external payloads are copied in from `source`'s
// files. Embedded, the main graph's initializers are streamed between their
// fields, so the file is byte for byte what serializing the embedded model
// would give, without holding it in memory.
// On failure `out_path` is as it was (no temp file left) and `error` is one
// line naming the file. A symlink is followed; the .data file goes beside the
// file it leads to.
bool write_model_atomic(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                        const WriteOptions& options, WriteResult& result, std::string& error);

// The default output for --fix: <dir>/<stem>.fixed.onnx beside the input.
std::string default_fixed_path(const std::string& input_path);

}  // namespace bpulint
