#include "bpulint/model_writer.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
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

}  // namespace

bool write_file_atomic(const std::string& path, const std::string& bytes, std::string& error) {
  const std::string dir = folder_of(path);
  std::string tmp = (fs::path(dir) / ("." + fs::path(path).filename().string() + ".tmp-XXXXXX")).string();
  const int fd = mkstemp(tmp.data());
  if (fd < 0) {
    error = "cannot create a temporary file in '" + dir + "': " + std::strerror(errno);
    return false;
  }
  const mode_t mask = umask(0);
  umask(mask);
  bool ok = fchmod(fd, 0666 & ~mask) == 0;
  for (size_t done = 0; ok && done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) ok = false;
    else done += static_cast<size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno ? errno : EIO);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string default_fixed_path(const std::string& input_path) {
  fs::path p(input_path);
  const std::string stem = p.extension() == ".onnx" ? p.stem().string() : p.filename().string();
  return (p.parent_path() / (stem + ".fixed.onnx")).string();
}

bool write_model_atomic(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                        std::string& error) {
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
  if (!embed_payloads(source, model, same_file(dir, folder_of(source.path)), error)) return false;
  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    error = "the fixed model would exceed protobuf's 2 GiB limit";
    return false;
  }

  std::string tmp = (fs::path(dir) / ("." + fs::path(out_path).filename().string() + ".tmp-XXXXXX")).string();
  const int fd = mkstemp(tmp.data());
  if (fd < 0) {
    error = "cannot create a temporary file in '" + dir + "': " + std::strerror(errno);
    return false;
  }
  bool written = false;
  {
    google::protobuf::io::FileOutputStream stream(fd);
    written = model.SerializeToZeroCopyStream(&stream) && stream.Flush();
  }
  // mkstemp creates 0600; a model file gets the permissions the umask allows.
  const mode_t mask = umask(0);
  umask(mask);
  if (written && fchmod(fd, 0666 & ~mask) != 0) written = false;
  if (written && fsync(fd) != 0) written = false;
  const int close_result = close(fd);
  if (!written || close_result != 0 || rename(tmp.c_str(), out_path.c_str()) != 0) {
    error = "cannot write '" + out_path + "': " + std::strerror(errno ? errno : EIO);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace bpulint
