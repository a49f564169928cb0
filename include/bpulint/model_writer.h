// Writing a model: atomically, by the output policy of output_file.h (a
// regular file only, never the input or its external data), with weights that
// the loader left on disk embedded again from the source file.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "bpulint/model_loader.h"

namespace bpulint {

struct WriteOptions {
  // Weights go to <out>.data beside the model (ONNX external data) instead of
  // into it. Chosen automatically when the model would pass protobuf's 2 GiB.
  bool external_data = false;
};

struct WriteResult {
  bool external_data = false;
  std::string data_path;  // when external_data
};

// `model` is consumed: its stripped payloads are filled in from `source`.
// On failure `out_path` is as it was (no temp file left) and `error` is one
// line naming the file. A symlink is followed; the .data file goes beside the
// file it leads to.
bool write_model_atomic(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                        const WriteOptions& options, WriteResult& result, std::string& error);

// The default output for --fix: <dir>/<stem>.fixed.onnx beside the input.
std::string default_fixed_path(const std::string& input_path);

}  // namespace bpulint
