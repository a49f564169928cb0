#include "bpulint/model_writer.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

#include "bpulint/output_file.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Every TensorProto of the model, subgraphs and functions included.
void for_each_tensor(onnx::GraphProto& g, const std::function<bool(onnx::TensorProto&)>& fn, bool& ok) {
  for (auto& t : *g.mutable_initializer()) ok = ok && fn(t);
  for (auto& s : *g.mutable_sparse_initializer()) ok = ok && fn(*s.mutable_values()) && fn(*s.mutable_indices());
  for (auto& n : *g.mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) ok = ok && fn(*a.mutable_t());
      for (auto& t : *a.mutable_tensors()) ok = ok && fn(t);
      if (a.has_g()) for_each_tensor(*a.mutable_g(), fn, ok);
      for (auto& sub : *a.mutable_graphs()) for_each_tensor(sub, fn, ok);
    }
  }
}

// Embeds payloads the loader left in the source file, and external data that
// would not resolve from the output's folder.
bool embed_payloads(const LoadedModel& source, onnx::ModelProto& model, bool same_folder, std::string& error) {
  bool ok = true;
  auto embed = [&](onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return true;
    if (same_folder && !is_self_reference(source, t)) return true;  // the user's own external file stays
    std::string bytes;
    if (!read_tensor_bytes(source, t, bytes, error)) {
      error = "tensor '" + t.name() + "': " + error;
      return false;
    }
    t.clear_external_data();
    t.clear_data_location();
    t.set_raw_data(std::move(bytes));
    return true;
  };
  for_each_tensor(*model.mutable_graph(), embed, ok);
  for (auto& f : *model.mutable_functions()) {
    for (auto& n : *f.mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_t()) ok = ok && embed(*a.mutable_t());
      }
    }
  }
  return ok;
}

}  // namespace

std::string default_fixed_path(const std::string& input_path) {
  fs::path p(input_path);
  const std::string stem = p.extension() == ".onnx" ? p.stem().string() : p.filename().string();
  return (p.parent_path() / (stem + ".fixed.onnx")).string();
}

namespace {

uint64_t external_length(const onnx::TensorProto& t) {
  for (const auto& e : t.external_data()) {
    if (e.key() == "length") return std::strtoull(e.value().c_str(), nullptr, 10);
  }
  return UINT64_MAX;  // to the end of a file: assume large
}

// Payload bytes embedding would add to the serialized model.
uint64_t bytes_to_embed(onnx::ModelProto& model) {
  uint64_t total = 0;
  bool ok = true;
  for_each_tensor(*model.mutable_graph(), [&](onnx::TensorProto& t) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      const uint64_t n = external_length(t);
      total = n == UINT64_MAX || total + n < total ? UINT64_MAX : total + n;
    }
    return true;
  }, ok);
  return total;
}

constexpr uint64_t kInlineLimit = 1024;  // smaller tensors stay inline in external-data mode
constexpr uint64_t kProtobufLimit = static_cast<uint64_t>(INT_MAX);

// Writes every sizeable tensor to the data file and points the model at it.
bool externalize(const LoadedModel& source, onnx::ModelProto& model, AtomicFile& data, const std::string& location,
                 std::string& error) {
  uint64_t offset = 0;
  bool ok = true;
  auto move_out = [&](onnx::TensorProto& t) {
    std::string bytes;
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      if (!read_tensor_bytes(source, t, bytes, error)) {  // one tensor in memory at a time
        error = "tensor '" + t.name() + "': " + error;
        return false;
      }
    } else if (t.raw_data().size() > kInlineLimit) {
      bytes.swap(*t.mutable_raw_data());
    } else {
      return true;
    }
    if (!data.write(bytes.data(), bytes.size(), error)) return false;
    t.clear_raw_data();
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : {std::pair<const char*, std::string>{"location", location},
                               {"offset", std::to_string(offset)},
                               {"length", std::to_string(bytes.size())}}) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    offset += bytes.size();
    return true;
  };
  for_each_tensor(*model.mutable_graph(), move_out, ok);
  return ok;
}

// The files the source model reads: the model and its own external data files.
std::vector<std::string> source_files(const LoadedModel& source, onnx::ModelProto& model) {
  std::vector<std::string> files = {source.path};
  bool ok = true;
  for_each_tensor(*model.mutable_graph(), [&](onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL || is_self_reference(source, t)) return true;
    for (const auto& e : t.external_data()) {
      if (e.key() == "location") files.push_back((fs::path(source.folder) / e.value()).string());
    }
    return true;
  }, ok);
  return files;
}

}  // namespace

bool write_model_atomic(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                        const WriteOptions& options, WriteResult& result, std::string& error) {
  result = WriteResult{};
  const std::vector<std::string> inputs = source_files(source, model);
  OutputTarget target;
  AtomicFile file;
  if (!resolve_output(out_path, OutputUse::Model, inputs, target, error) || !file.open(target, error)) return false;
  const std::string dir = folder_of(target.file);  // a symlink's target folder: the .data file goes beside the model
  const uint64_t embed = bytes_to_embed(model);
  result.external_data = options.external_data || embed == UINT64_MAX || model.ByteSizeLong() + embed > kProtobufLimit;
  AtomicFile data;
  if (result.external_data) {
    result.data_path = target.file + ".data";
    OutputTarget data_target;
    if (!resolve_output(result.data_path, OutputUse::Model, inputs, data_target, error) ||
        !data.open(data_target, error) ||
        !externalize(source, model, data, fs::path(result.data_path).filename().string(), error)) {
      return false;
    }
  } else if (!embed_payloads(source, model, same_file(dir, source.folder), error)) {
    return false;
  }
  if (model.ByteSizeLong() > kProtobufLimit) {
    error = "the fixed model's structure alone exceeds protobuf's 2 GiB limit";
    return false;
  }
  {
    google::protobuf::io::FileOutputStream stream(file.fd());
    if (!model.SerializeToZeroCopyStream(&stream) || !stream.Flush()) {
      error = file.write_error(stream.GetErrno());
      return false;
    }
  }
  if (!file.sync(error) || (result.external_data && !data.sync(error))) return false;
  // Both land or neither is interrupted between them; the data file first: a
  // model never points at data that is not there.
  InterruptShield shield;
  return (!result.external_data || data.commit(error)) && file.commit(error);
}

}  // namespace bpulint
