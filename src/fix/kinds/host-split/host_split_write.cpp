// Writing the host split's two models: both or neither (host_split.h).
#include <filesystem>
#include <string>
#include <vector>

#include "bpulint/base/output_file.h"
#include "bpulint/model/model_writer.h"
#include "host_split.h"

namespace bpulint {

HostSplitPaths default_host_split_paths(const std::string& input_path) {
  const std::filesystem::path p(input_path);
  const std::string stem = p.extension() == ".onnx" ? p.stem().string() : p.filename().string();
  return {(p.parent_path() / (stem + ".bpu.onnx")).string(), (p.parent_path() / (stem + ".host.onnx")).string()};
}

bool write_host_split(const LoadedModel& source, HostSplitPlan& plan, const HostSplitPaths& paths, std::string& error,
                      bool external_data) {
  if (!prove_host_split(*source.model, plan, source.folder.empty() ? "." : source.folder, error)) {
    error = "the host split is not proven, so not written: " + error;
    return false;
  }
  // One file for both parts would leave only the second.
  OutputTarget bpu, host;
  if (!resolve_output(paths.bpu, OutputUse::Model, {source.path}, bpu, error) ||
      !resolve_output(paths.host, OutputUse::Model, {source.path}, host, error)) {
    return false;
  }
  if (bpu.file == host.file) {
    error = paths.host + ": is also the BPU part's output (" + paths.bpu + ")";
    return false;
  }
  WriteOptions bpu_options, host_options;
  bpu_options.external_data = host_options.external_data = external_data;
  bpu_options.role = kHostSplitBpuRole;
  host_options.role = kHostSplitHostRole;
  PendingModelWrite bpu_write, host_write;
  return prepare_model_write(source, plan.head, paths.bpu, bpu_options, bpu_write, error) &&
         prepare_model_write(source, plan.tail, paths.host, host_options, host_write, error) &&
         commit_model_writes({&bpu_write, &host_write}, error);
}

}  // namespace bpulint
