#include "bpulint/model_writer.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

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

// A temp file beside `path`, removed unless committed: every write is
// temp + fsync + rename, so an interrupted run leaves nothing behind.
class TempFile {
 public:
  explicit TempFile(const std::string& path) : target_(path) {
    const std::string dir = folder_of(path);
    name_ = (fs::path(dir) / ("." + fs::path(path).filename().string() + ".tmp-XXXXXX")).string();
    fd_ = mkstemp(name_.data());
    if (fd_ >= 0) {
      const mode_t mask = umask(0);  // mkstemp makes 0600; a model gets what the umask allows
      umask(mask);
      if (fchmod(fd_, 0666 & ~mask) != 0) close_fd();
    }
  }
  ~TempFile() {
    close_fd();
    if (!committed_) unlink(name_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  bool write_all(const char* data, size_t size) {
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  bool sync_and_close() {
    const bool synced = fsync(fd_) == 0;
    const bool closed = close(fd_) == 0;
    fd_ = -1;
    return synced && closed;
  }
  bool commit() {
    committed_ = rename(name_.c_str(), target_.c_str()) == 0;
    return committed_;
  }

 private:
  void close_fd() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  std::string target_, name_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

bool write_file_atomic(const std::string& path, const std::string& bytes, std::string& error) {
  TempFile file(path);
  if (!file.ok()) {
    error = "cannot create a temporary file in '" + folder_of(path) + "': " + std::strerror(errno);
    return false;
  }
  if (!file.write_all(bytes.data(), bytes.size()) || !file.sync_and_close() || !file.commit()) {
    error = "cannot write '" + path + "': " + std::strerror(errno ? errno : EIO);
    return false;
  }
  return true;
}

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
bool externalize(const LoadedModel& source, onnx::ModelProto& model, TempFile& data, const std::string& location,
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
    if (!data.write_all(bytes.data(), bytes.size())) {
      error = std::string("cannot write the external data: ") + std::strerror(errno ? errno : EIO);
      return false;
    }
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

}  // namespace

bool write_model_atomic(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                        const WriteOptions& options, WriteResult& result, std::string& error) {
  result = WriteResult{};
  if (out_path.empty()) {
    error = "empty output path";
    return false;
  }
  if (same_file(out_path, source.path)) {
    error = "refusing to overwrite the input model";
    return false;
  }
  const std::string dir = folder_of(out_path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = "output folder '" + dir + "' does not exist";
    return false;
  }
  const uint64_t embed = bytes_to_embed(model);
  result.external_data = options.external_data || embed == UINT64_MAX || model.ByteSizeLong() + embed > kProtobufLimit;
  std::unique_ptr<TempFile> data;
  if (result.external_data) {
    result.data_path = out_path + ".data";
    if (same_file(result.data_path, source.path)) {
      error = "refusing to overwrite the input model";
      return false;
    }
    data = std::make_unique<TempFile>(result.data_path);
    if (!data->ok()) {
      error = "cannot create a temporary file in '" + dir + "': " + std::strerror(errno);
      return false;
    }
    if (!externalize(source, model, *data, fs::path(result.data_path).filename().string(), error)) return false;
  } else if (!embed_payloads(source, model, same_file(dir, folder_of(source.path)), error)) {
    return false;
  }
  if (model.ByteSizeLong() > kProtobufLimit) {
    error = "the fixed model's structure alone exceeds protobuf's 2 GiB limit";
    return false;
  }
  TempFile file(out_path);
  if (!file.ok()) {
    error = "cannot create a temporary file in '" + dir + "': " + std::strerror(errno);
    return false;
  }
  bool written = false;
  {
    google::protobuf::io::FileOutputStream stream(file.fd());
    written = model.SerializeToZeroCopyStream(&stream) && stream.Flush();
  }
  // The data file lands first: a model never points at data that is not there.
  if (!written || !file.sync_and_close() || (data && (!data->sync_and_close() || !data->commit())) || !file.commit()) {
    error = "cannot write '" + out_path + "': " + std::strerror(errno ? errno : EIO);
    return false;
  }
  return true;
}

}  // namespace bpulint
