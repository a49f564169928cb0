// Writing a model: atomically, by the output policy of output_file.h (a
// regular file only, never the input or its external data), self-contained:
// every payload the loader left on disk, and the source's own external data,
// is copied into the output (or its own .data file), file to file, one tensor
// at a time. The output never points into the source's files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
  // The output's role in the run's plan of reads and writes (io_plan.h);
  // nullptr: kFixedModelRole.
  const char* role = nullptr;
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

// Several models that land together (a host split's two parts): each is
// written and synced to a temp file first (prepare_model_write), then all are
// put in place at once (commit_model_writes), so a failed write leaves every
// target as it was. Destroyed uncommitted, a pending write leaves nothing.
class PendingModelWrite {
 public:
  PendingModelWrite();
  ~PendingModelWrite();
  PendingModelWrite(const PendingModelWrite&) = delete;
  PendingModelWrite& operator=(const PendingModelWrite&) = delete;
  const WriteResult& result() const { return result_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  WriteResult result_;
  friend bool prepare_model_write(const LoadedModel&, onnx::ModelProto&, const std::string&, const WriteOptions&,
                                  PendingModelWrite&, std::string&);
  friend bool commit_model_writes(const std::vector<PendingModelWrite*>&, std::string&);
};
bool prepare_model_write(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                         const WriteOptions& options, PendingModelWrite& pending, std::string& error);
// Renames are all that is left, under one InterruptShield: a failure here
// (rare: the folder went away) can leave the writes before it in place.
bool commit_model_writes(const std::vector<PendingModelWrite*>& writes, std::string& error);

// The default output for --fix: <dir>/<stem>.fixed.onnx beside the input.
std::string default_fixed_path(const std::string& input_path);

}  // namespace bpulint
