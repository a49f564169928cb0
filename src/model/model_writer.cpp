#include "bpulint/model/model_writer.h"

#include <google/protobuf/io/coded_stream.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "bpulint/base/io_plan.h"
#include "bpulint/base/output_file.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

// Every TensorProto of a graph: initializers, sparse initializers, attribute
// tensors, and the same in subgraphs.
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

// ... and of a whole model: its graph and its model-local functions.
bool for_each_tensor(onnx::ModelProto& model, const std::function<bool(onnx::TensorProto&)>& fn) {
  bool ok = true;
  for_each_tensor(*model.mutable_graph(), fn, ok);
  for (auto& f : *model.mutable_functions()) {
    for (auto& n : *f.mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_t()) ok = ok && fn(*a.mutable_t());
        for (auto& t : *a.mutable_tensors()) ok = ok && fn(t);
        if (a.has_g()) for_each_tensor(*a.mutable_g(), fn, ok);
        for (auto& sub : *a.mutable_graphs()) for_each_tensor(sub, fn, ok);
      }
    }
  }
  return ok;
}

bool is_external(const onnx::TensorProto& t) { return t.data_location() == onnx::TensorProto::EXTERNAL; }

// The computation of t's payload, when it is one (WriteOptions::computed).
const ComputedPayload* computed_payload(const ComputedPayloads* computed, const onnx::TensorProto& t) {
  if (computed == nullptr || !is_external(t)) return nullptr;
  const auto it = computed->find(t.name());
  return it == computed->end() ? nullptr : &it->second;
}

// Its bytes, exactly as long as announced.
bool compute_payload(const ComputedPayload& c, const std::string& name, std::string& bytes, std::string& error) {
  if (!c.compute(bytes, error)) {
    error = "tensor '" + name + "': " + error;
    return false;
  }
  if (bytes.size() != c.length) {
    error = "tensor '" + name + "': computed " + std::to_string(bytes.size()) + " bytes, expected " +
            std::to_string(c.length);
    return false;
  }
  return true;
}

// The source files the payloads are copied from. Each is opened as the
// loader checked it (beneath the model's folder: a file swapped for a symlink
// out of it since is refused, never copied). At most kMaxOpen stay open, the
// least recently opened closed first, so a model with thousands of external
// files stays under the common limit of 1,024 descriptors.
class SourceFiles {
 public:
  SourceFiles() = default;
  SourceFiles(const SourceFiles&) = delete;
  SourceFiles& operator=(const SourceFiles&) = delete;
  ~SourceFiles() {
    for (auto& [path, fd] : fds_) ::close(fd);
  }
  int open(const ExternalSpan& span, std::string& error) {
    auto it = fds_.find(span.file);
    if (it != fds_.end()) return it->second;
    int fd = -1;
    if (!open_external_span(span, fd, error)) {
      error = "external data '" + span.location + "': " + error;
      return -1;
    }
    if (order_.size() >= kMaxOpen) {
      auto oldest = fds_.find(order_.front());
      ::close(oldest->second);
      fds_.erase(oldest);
      order_.pop_front();
    }
    fds_.emplace(span.file, fd);
    order_.push_back(span.file);
    return fd;
  }

 private:
  static constexpr size_t kMaxOpen = 64;
  std::map<std::string, int> fds_;
  std::deque<std::string> order_;
};

bool copy_span(const ExternalSpan& span, SourceFiles& sources, AtomicFile& out, std::string& error) {
  const int fd = sources.open(span, error);
  return fd >= 0 && out.copy_from(fd, span.offset, span.length, error);
}

// Puts the bytes of an external tensor into raw_data (for tensors outside the
// main graph's initializer list: attribute tensors, subgraphs, functions).
bool embed_in_memory(const LoadedModel& source, const ComputedPayloads* computed, onnx::TensorProto& t,
                     std::string& error) {
  std::string bytes;
  if (const ComputedPayload* c = computed_payload(computed, t)) {
    if (!compute_payload(*c, t.name(), bytes, error)) return false;
  } else if (!read_tensor_bytes(source, t, bytes, error)) {
    error = "tensor '" + t.name() + "': " + error;
    return false;
  }
  t.clear_external_data();
  t.clear_data_location();
  t.set_raw_data(std::move(bytes));
  return true;
}

// Moves the fields of `m` numbered below `number` into `head` and those above
// it into `tail`, unknown fields with them: protobuf writes a message as its
// fields in number order, unknown fields last, so head + field + tail
// serialize to exactly what `m` would.
void split_at(google::protobuf::Message& m, int number, google::protobuf::Message& head,
              google::protobuf::Message& tail) {
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> set, below, above;
  r->ListFields(m, &set);
  for (const auto* f : set) {
    if (f->number() < number) below.push_back(f);
    if (f->number() > number) above.push_back(f);
  }
  r->SwapFields(&m, &head, below);
  r->SwapFields(&m, &tail, above);
  tail.GetReflection()->MutableUnknownFields(&tail)->Swap(r->MutableUnknownFields(&m));
}

std::string field_header(int number, uint64_t length) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteTag(static_cast<uint32_t>(number) << 3 | 2);  // length-delimited
  coded.WriteVarint64(length);
  coded.Trim();
  return out;
}

// The output as pieces: bytes, a byte range of a source file, or a payload
// computed when it is written.
struct Piece {
  std::string bytes;
  const ExternalSpan* span = nullptr;
  const ComputedPayload* computed = nullptr;
  std::string name;  // of the computed payload's tensor
};

class Pieces {
 public:
  void add(std::string bytes) {
    size_ += bytes.size();
    if (list_.empty() || list_.back().span != nullptr || list_.back().computed != nullptr) list_.emplace_back();
    list_.back().bytes += bytes;
  }
  void add(const ExternalSpan& span) {
    size_ += span.length;
    list_.push_back({{}, &span, nullptr, {}});
  }
  void add(const ComputedPayload& computed, const std::string& name) {
    size_ += computed.length;
    list_.push_back({{}, nullptr, &computed, name});
  }
  void append(Pieces&& other) {
    for (auto& p : other.list_) {
      if (p.span != nullptr) add(*p.span);
      else if (p.computed != nullptr) add(*p.computed, p.name);
      else add(std::move(p.bytes));
    }
  }
  uint64_t size() const { return size_; }
  bool write(SourceFiles& sources, AtomicFile& out, std::string& error) const {
    for (const auto& p : list_) {
      if (p.computed != nullptr) {
        std::string bytes;  // one payload at a time
        if (!compute_payload(*p.computed, p.name, bytes, error) || !out.write(bytes.data(), bytes.size(), error)) {
          return false;
        }
      } else if (p.span != nullptr ? !copy_span(*p.span, sources, out, error)
                                   : !out.write(p.bytes.data(), p.bytes.size(), error)) {
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<Piece> list_;
  uint64_t size_ = 0;
};

// The main graph's initializers, each serialized with its payload copied from
// its file between its fields (canonical order: dims, data_type, name, then
// raw_data, then doc_string), the rest of the model around them: the file is
// byte for byte what SerializeToString of the embedded model would give, and
// no payload is ever held in memory.
bool plan_embedded(const LoadedModel& source, const ComputedPayloads* computed, onnx::ModelProto& model,
                   std::vector<std::unique_ptr<ExternalSpan>>& spans, Pieces& out, std::string& error) {
  // Payloads elsewhere (rare and small: attribute tensors, subgraphs, functions) are read into memory.
  onnx::GraphProto& graph = *model.mutable_graph();
  std::set<const onnx::TensorProto*> top;
  for (const auto& t : graph.initializer()) top.insert(&t);
  if (!for_each_tensor(model, [&](onnx::TensorProto& t) {
        return !is_external(t) || top.count(&t) != 0 || embed_in_memory(source, computed, t, error);
      })) {
    return false;
  }

  onnx::ModelProto model_head, model_tail;
  split_at(model, onnx::ModelProto::kGraphFieldNumber, model_head, model_tail);
  onnx::GraphProto graph_head, graph_tail;
  split_at(graph, onnx::GraphProto::kInitializerFieldNumber, graph_head, graph_tail);

  Pieces body;  // the graph's fields
  body.add(graph_head.SerializeAsString());
  for (auto& t : *graph.mutable_initializer()) {
    if (!is_external(t)) {
      const std::string bytes = t.SerializeAsString();
      body.add(field_header(onnx::GraphProto::kInitializerFieldNumber, bytes.size()) + bytes);
      continue;
    }
    const ComputedPayload* c = computed_payload(computed, t);
    if (c == nullptr) {
      spans.push_back(std::make_unique<ExternalSpan>());
      if (!external_span(source, t, *spans.back(), error)) {
        error = "tensor '" + t.name() + "': " + error;
        return false;
      }
    }
    const uint64_t length = c != nullptr ? c->length : spans.back()->length;
    const std::string name = t.name();
    t.clear_external_data();
    t.clear_data_location();
    onnx::TensorProto head, tail;
    split_at(t, onnx::TensorProto::kRawDataFieldNumber, head, tail);
    const std::string h = head.SerializeAsString(), tl = tail.SerializeAsString();
    const std::string raw = field_header(onnx::TensorProto::kRawDataFieldNumber, length);
    body.add(field_header(onnx::GraphProto::kInitializerFieldNumber, h.size() + raw.size() + length + tl.size()) +
             h + raw);
    if (c != nullptr) {
      body.add(*c, name);
    } else {
      body.add(*spans.back());
    }
    body.add(tl);
  }
  body.add(graph_tail.SerializeAsString());

  out.add(model_head.SerializeAsString() + field_header(onnx::ModelProto::kGraphFieldNumber, body.size()));
  out.append(std::move(body));
  out.add(model_tail.SerializeAsString());
  return true;
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
  for_each_tensor(model, [&](onnx::TensorProto& t) {
    if (is_external(t)) {
      const uint64_t n = external_length(t);
      total = n == UINT64_MAX || total + n < total ? UINT64_MAX : total + n;
    }
    return true;
  });
  return total;
}

constexpr uint64_t kInlineLimit = 1024;  // smaller tensors stay inline in external-data mode
constexpr uint64_t kProtobufLimit = static_cast<uint64_t>(INT_MAX);

// Writes every sizeable tensor to the data file and points the model at it:
// external payloads are copied file to file, one tensor at a time.
bool externalize(const LoadedModel& source, const ComputedPayloads* computed, onnx::ModelProto& model, AtomicFile& data,
                 const std::string& location, std::string& error) {
  uint64_t offset = 0;
  SourceFiles sources;
  return for_each_tensor(model, [&](onnx::TensorProto& t) {
    uint64_t length = 0;
    if (const ComputedPayload* c = computed_payload(computed, t)) {
      std::string bytes;  // one payload at a time
      if (!compute_payload(*c, t.name(), bytes, error) || !data.write(bytes.data(), bytes.size(), error)) return false;
      length = bytes.size();
    } else if (is_external(t)) {
      ExternalSpan span;
      if (!external_span(source, t, span, error) || !copy_span(span, sources, data, error)) {
        error = "tensor '" + t.name() + "': " + error;
        return false;
      }
      length = span.length;
    } else if (t.raw_data().size() > kInlineLimit) {
      if (!data.write(t.raw_data().data(), t.raw_data().size(), error)) return false;
      length = t.raw_data().size();
    } else {
      return true;
    }
    set_external_data(t, location, offset, length);
    offset += length;
    return true;
  });
}

// The files the source model reads: the model and its own external data files.
std::vector<std::string> source_files(const LoadedModel& source, onnx::ModelProto& model) {
  std::vector<std::string> files = {source.path};
  for_each_tensor(model, [&](onnx::TensorProto& t) {
    if (!is_external(t) || is_self_reference(source, t)) return true;
    for (const auto& e : t.external_data()) {
      if (e.key() == "location") files.push_back((fs::path(source.folder) / e.value()).string());
    }
    return true;
  });
  return files;
}

}  // namespace

namespace {

// Whether the file names `location` in its bytes: an ONNX model stores an
// external data location verbatim. Read in chunks, never whole.
bool file_mentions(const std::string& file, const std::string& location) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  std::string window;
  std::vector<char> chunk(1 << 20);
  bool found = false;
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    window.append(chunk.data(), static_cast<size_t>(n));
    if (window.find(location) != std::string::npos) {
      found = true;
      break;
    }
    // Keep the tail a match may start in.
    if (window.size() >= location.size()) window.erase(0, window.size() - (location.size() - 1));
  }
  ::close(fd);
  return found;
}

// The two names a model's weights file may have beside it (<model>.data and
// <model>.1.data): the one to write, and the one the replaced model uses.
struct DataNames {
  std::string free, used_by_old;
};
DataNames data_names(const OutputTarget& target) {
  const std::string first = target.file + ".data", second = target.file + ".1.data";
  // Only a weights file that is there can be overwritten or left behind; the
  // replaced model (which may embed gigabytes) is read only then.
  const auto named = [&](const std::string& path) {
    std::error_code ec;
    return target.exists && fs::is_regular_file(path, ec) &&
           file_mentions(target.file, fs::path(path).filename().string());
  };
  const bool first_used = named(first), second_used = named(second);
  if (first_used && !second_used) return {second, first};
  return {first, second_used ? second : ""};
}

// Removes the replaced model's weights file, unless this run reads it (the
// source model's own weights, say).
void remove_replaced_data(const std::string& path) {
  struct stat st {};
  std::string why;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && write_keeps_reads(st.st_dev, st.st_ino, why)) {
    ::unlink(path.c_str());
  }
}

}  // namespace

struct PendingModelWrite::State {
  std::string out_path;
  AtomicFile file, data;
  std::string replaced_data;  // the replaced model's weights file, removed once the new one is in place
};

PendingModelWrite::PendingModelWrite() = default;
PendingModelWrite::~PendingModelWrite() = default;

bool prepare_model_write(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                         const WriteOptions& options, PendingModelWrite& pending, std::string& error) {
  pending.result_ = WriteResult{};
  pending.state_ = std::make_unique<PendingModelWrite::State>();
  PendingModelWrite::State& state = *pending.state_;
  WriteResult& result = pending.result_;
  state.out_path = out_path;
  const std::vector<std::string> inputs = source_files(source, model);
  OutputTarget target;
  AtomicFile& file = state.file;
  if (!plan_write(out_path, options.role != nullptr ? options.role : kFixedModelRole, error)) {
    error = out_path + ": " + error;
    return false;
  }
  if (!resolve_output(out_path, OutputUse::Model, inputs, target, error) || !file.open(target, error)) return false;
  const uint64_t embed = bytes_to_embed(model);
  result.external_data = options.external_data || embed == UINT64_MAX || model.ByteSizeLong() + embed > kProtobufLimit;
  AtomicFile& data = state.data;
  SourceFiles sources;
  std::vector<std::unique_ptr<ExternalSpan>> spans;
  Pieces pieces;
  // The model this write replaces may name its weights file beside it: the
  // new weights never go into that file (a kill between the two renames would
  // leave the old model reading new bytes), but into the other of two names,
  // and the old file goes once the new model is in place.
  const DataNames names = data_names(target);
  state.replaced_data = names.used_by_old;
  if (result.external_data) {
    // A symlink's target folder: the .data file goes beside the model.
    result.data_path = names.free;
    OutputTarget data_target;
    if (!resolve_output(result.data_path, OutputUse::Model, inputs, data_target, error)) return false;
    if (!plan_write(result.data_path, "the fixed model's .data file", error)) {
      error = result.data_path + ": " + error;
      return false;
    }
    if (!data.open(data_target, error) ||
        !externalize(source, options.computed, model, data, fs::path(result.data_path).filename().string(), error)) {
      return false;
    }
    if (model.ByteSizeLong() > kProtobufLimit) {
      error = "the fixed model's structure alone exceeds protobuf's 2 GiB limit";
      return false;
    }
    pieces.add(model.SerializeAsString());
  } else if (!plan_embedded(source, options.computed, model, spans, pieces, error)) {
    return false;
  }
  return pieces.write(sources, file, error) && file.sync(error) && (!result.external_data || data.sync(error));
}

bool commit_model_writes(const std::vector<PendingModelWrite*>& writes, std::string& error) {
  // Each pair lands or none is interrupted between them; the data file
  // first: a model never points at data that is not there. A SIGKILL between
  // them leaves the old model with its own data file, untouched.
  InterruptShield shield;
  for (PendingModelWrite* w : writes) {
    if (w->state_ == nullptr) {
      error = "internal error: a model write committed before it was prepared";
      return false;
    }
    PendingModelWrite::State& state = *w->state_;
    if (w->result_.external_data) {
      if (!state.data.commit(error)) return false;
      if (const char* hook = std::getenv("BPULINT_TEST_KILL_BETWEEN_COMMITS"); hook != nullptr && *hook == '1') {
        ::raise(SIGKILL);  // a test hook: the kill the issue names, at the worst moment
      }
    }
    if (!state.file.commit(error)) return false;
    if (!state.replaced_data.empty() && state.replaced_data != w->result_.data_path) {
      remove_replaced_data(state.replaced_data);
    }
  }
  return true;
}

bool write_model_atomic(const LoadedModel& source, onnx::ModelProto& model, const std::string& out_path,
                        const WriteOptions& options, WriteResult& result, std::string& error) {
  PendingModelWrite pending;
  const bool ok = prepare_model_write(source, model, out_path, options, pending, error) &&
                  commit_model_writes({&pending}, error);
  result = pending.result();
  return ok;
}

}  // namespace bpulint
