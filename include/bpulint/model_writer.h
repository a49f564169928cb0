// Writing a model: atomically (temp file in the target folder, fsync, rename),
// never over the input, with weights that the loader left on disk embedded
// again from the source file.
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
// On failure nothing is left at `out_path` (nor any temp file) and `error` is
// one line.
bool write_model_atomic(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                        const WriteOptions& options, WriteResult& result, std::string& error);

// Any other output file (PyTorch snippets, reports): same temp + rename rule.
bool write_file_atomic(const std::string& path, const std::string& bytes, std::string& error);

// The default output for --fix: <dir>/<stem>.fixed.onnx beside the input.
std::string default_fixed_path(const std::string& input_path);

}  // namespace bpulint
