// See model_loader.h for the why. This file reads the model file's bytes
// (MappedFile), assembles the ModelProto from its lean copy (wire_scanner.h has
// the wire format) and reads tensor bytes, typed or external.
#include "bpulint/model/model_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>

#include "bpulint/base/bulk_memory.h"
#include "bpulint/base/io_plan.h"
#include "bpulint/base/open_beneath.h"
#include "bpulint/base/side_by_side.h"
#include "bpulint/model/tensor_values.h"
#include "wire_scanner.h"

namespace bpulint {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// MappedFile
// ---------------------------------------------------------------------------

// Closes a file descriptor on scope exit.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string errno_text(int err) { return std::strerror(err); }

// Reads exactly `length` bytes at `offset` (pread may return short counts).
bool pread_all(int fd, uint64_t offset, uint64_t length, char* dst,
               std::string& error) {
  while (length > 0) {
    const size_t chunk =
        static_cast<size_t>(std::min<uint64_t>(length, 1u << 30));
    const ssize_t n = ::pread(fd, dst, chunk, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "read failed: " + errno_text(errno);
      return false;
    }
    if (n == 0) {
      error = "read failed: file shrank while reading";
      return false;
    }
    dst += n;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  return true;
}

// Read-only bytes of a whole file. mmap means untouched pages (the weights)
// are never read from disk (with read-ahead off, see open; reads() decides
// what is read); if mmap is unavailable we fall back to read().
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile() {
    if (map_ != nullptr) ::munmap(map_, static_cast<size_t>(size_));
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool open(const std::string& path, bool strict_reads, std::string& error) {
    // O_NONBLOCK: opening a FIFO must not hang; fstat rejects it right after.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      error = open_error(errno);
      return false;
    }
    FdGuard guard(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      error = "cannot stat: " + errno_text(errno);
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      error = "is a directory";
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      error = "not a regular file";
      return false;
    }
    if (st.st_size == 0) {  // mmap of length 0 is an error; say it plainly
      error = "empty file";
      return false;
    }
    if (!note_read(fd, path, "an input model", error)) return false;
    size_ = static_cast<uint64_t>(st.st_size);
    void* p = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ,
                     MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      // Random access: the default read-ahead around each touched page would
      // pull in the weights the loader skips over, so a cold lint would read
      // the whole file. Advice only: a failure changes nothing else.
      (void)::madvise(p, static_cast<size_t>(size_), MADV_RANDOM);
      map_ = p;
      data_ = static_cast<const uint8_t*>(p);
      reads_.emplace(data_, size_, strict_reads);
      return true;
    }
    fallback_.resize(static_cast<size_t>(size_));
    if (!pread_all(fd, 0, size_, fallback_.data(), error)) return false;
    data_ = reinterpret_cast<const uint8_t*>(fallback_.data());
    return true;
  }

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Null when the file was read whole.
  SkeletonReads* reads() { return reads_ ? &*reads_ : nullptr; }
  uint64_t read_bytes() const { return reads_ ? reads_->requested_bytes() : size_; }

  static std::string open_error(int err) {
    if (err == ENOENT || err == ENOTDIR) return "no such file";
    if (err == EISDIR) return "is a directory";
    return "cannot open: " + errno_text(err);
  }

 private:
  void* map_ = nullptr;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string fallback_;
  std::optional<SkeletonReads> reads_;
};

// ---------------------------------------------------------------------------
// Helpers for the public functions
// ---------------------------------------------------------------------------

std::string basename_of(const std::string& path) {
  return fs::path(path).filename().string();
}

bool check_model_header(const onnx::ModelProto& model, std::string& error) {
  if (!model.has_graph()) {
    error = std::string(kNotOnnx) + "no graph";
    return false;
  }
  if (model.ir_version() <= 0) {
    error = std::string(kNotOnnx) + "missing ir_version";
    return false;
  }
  return true;
}

// Entries from which the graph is parsed on two threads; below it one is as
// fast (set_parse_split_from: the fuzz targets set 2).
std::atomic<size_t> parse_split_from{4096};

// Parses `size` bytes into `model` (on its arena) as ParseFromArray would,
// with the main graph's nodes and initializers parsed on two threads. Each is
// a separate entry of a repeated message field, so parsing the entries apart
// and appending them in file order builds the same message; the rest is one
// smaller message. Each entry gets the recursion budget it has inside the
// whole model (two levels down), so what nests too deeply fails the same way.
// Anything unusual (a second `graph` field, a small graph) is parsed whole.
bool parse_model(const uint8_t* data, uint64_t size, onnx::ModelProto& model) {
  const size_t split_from = parse_split_from.load(std::memory_order_relaxed);
  struct Span {
    uint64_t begin, end;
  };
  std::vector<Span> nodes, inits;
  std::string skeleton;
  int graphs = 0;
  std::string ignored;
  FieldReader top(data, 0, size);
  while (!top.done()) {
    Field f;
    if (!top.next(f, ignored)) return model.ParseFromArray(data, static_cast<int>(size));
    if (f.number != 7 || f.wire_type != kLengthDelimited) {
      skeleton.append(reinterpret_cast<const char*>(data + f.start), f.end - f.start);
      continue;
    }
    ++graphs;
    std::string rest;
    FieldReader graph(data, f.payload, f.end);
    while (!graph.done()) {
      Field g;
      if (!graph.next(g, ignored)) return model.ParseFromArray(data, static_cast<int>(size));
      if (g.wire_type == kLengthDelimited && (g.number == 1 || g.number == 5)) {
        (g.number == 1 ? nodes : inits).push_back({g.payload, g.end});
      } else {
        rest.append(reinterpret_cast<const char*>(data + g.start), g.end - g.start);
      }
    }
    put_bytes_field(skeleton, 7, rest);
  }
  if (graphs != 1 || nodes.size() + inits.size() < split_from) {
    return model.ParseFromArray(data, static_cast<int>(size));
  }
  if (!model.ParseFromString(skeleton)) return false;

  google::protobuf::Arena* arena = model.GetArena();
  std::vector<onnx::NodeProto*> node_msgs(nodes.size());
  std::vector<onnx::TensorProto*> init_msgs(inits.size());
  const int budget = google::protobuf::io::CodedInputStream::GetDefaultRecursionLimit() - 2;
  auto parse_one = [&](google::protobuf::MessageLite& m, const Span& span) {
    google::protobuf::io::CodedInputStream in(data + span.begin, static_cast<int>(span.end - span.begin));
    in.SetRecursionLimit(budget);
    return m.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  };
  // Entries [lo, hi) of nodes then initializers.
  auto parse_range = [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      if (i < nodes.size()) {
        node_msgs[i] = google::protobuf::Arena::CreateMessage<onnx::NodeProto>(arena);
        if (!parse_one(*node_msgs[i], nodes[i])) return false;
      } else {
        const size_t k = i - nodes.size();
        init_msgs[k] = google::protobuf::Arena::CreateMessage<onnx::TensorProto>(arena);
        if (!parse_one(*init_msgs[k], inits[k])) return false;
      }
    }
    return true;
  };
  // Split where half the work is: a node (names, attributes) costs about
  // four times an initializer (one name, dims, a payload copied whole).
  const size_t node_work = 4 * nodes.size();
  const size_t half = (node_work + inits.size()) / 2;
  const size_t mid = half <= node_work ? (half + 3) / 4 : nodes.size() + (half - node_work);
  bool first_ok = false, second_ok = false;
  run_side_by_side([&] { first_ok = parse_range(0, mid); },
                   [&] { second_ok = parse_range(mid, nodes.size() + inits.size()); });
  if (!first_ok || !second_ok) return false;
  auto* graph = model.mutable_graph();
  graph->mutable_node()->Reserve(graph->node_size() + static_cast<int>(node_msgs.size()));
  for (auto* n : node_msgs) graph->mutable_node()->UnsafeArenaAddAllocated(n);
  graph->mutable_initializer()->Reserve(graph->initializer_size() + static_cast<int>(init_msgs.size()));
  for (auto* t : init_msgs) graph->mutable_initializer()->UnsafeArenaAddAllocated(t);
  return true;
}

void external_locations(const onnx::GraphProto& g, std::set<std::string>& out) {
  const auto add = [&](const onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    for (const auto& e : t.external_data()) {
      if (e.key() == "location") out.insert(e.value());
    }
  };
  for (const auto& t : g.initializer()) add(t);
  for (const auto& s : g.sparse_initializer()) {
    add(s.values());
    add(s.indices());
  }
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_t()) add(a.t());
      for (const auto& t : a.tensors()) add(t);
      if (a.has_g()) external_locations(a.g(), out);
      for (const auto& sub : a.graphs()) external_locations(sub, out);
    }
  }
}

// The external data files a model names go into the run's plan of reads
// before anything else happens (a lint never opens them), so that no output
// of the run can replace the weights. Locations the reads refuse (absolute,
// escaping) are left to them.
bool note_external_files(const onnx::ModelProto& model, const std::string& folder, const std::string& own_name,
                         const std::string& path, std::string& error) {
  std::set<std::string> locations;
  external_locations(model.graph(), locations);
  for (const auto& loc : locations) {
    const fs::path normal = fs::path(loc).lexically_normal();
    if (loc.find('\0') != std::string::npos || normal.empty() || normal.has_root_path() ||
        *normal.begin() == ".." || normal == fs::path(own_name)) {
      continue;
    }
    const std::string file = (fs::path(folder) / normal).string();
    if (!note_read_path(file, "the external data of " + path, error)) {
      error = file + ": " + error;
      return false;
    }
  }
  return true;
}

bool load_model_impl(const std::string& path, LoadedModel& out, std::string& error, const LoadOptions& options) {
  MappedFile file;
  if (!file.open(path, options.strict_reads, error)) return false;

  // The real file's folder and name, through any symlink: external data
  // (and the loader's own self-references) resolve there.
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  const std::string real_name = ec ? basename_of(path) : real.filename().string();
  std::string folder = ec ? fs::path(path).parent_path().string() : real.parent_path().string();
  if (folder.empty()) folder = ".";
  LeanCopy lean;
  // Where the framing breaks, said as a scan of every field finds it first.
  const auto exact_framing_error = [&](std::string& message) {
    std::string first_break;
    if (!check_framing(file.data(), file.size(), file.reads(), first_break)) message = first_break;
  };
  if (!encode_lean_copy(file.data(), file.size(), real_name, file.reads(), lean, error)) {
    exact_framing_error(error);
    return false;
  }
  if (lean.unchanged && file.size() > kMaxLeanSize) {
    error = "model structure exceeds 2 GiB";
    return false;
  }

  // Nothing stripped: the file is the lean copy, and protobuf reads all of it.
  if (lean.unchanged && file.reads() != nullptr) file.reads()->need_all();
  LoadedModel result;
  result.arena = make_bulk_arena();
  result.model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(result.arena.get());
  const bool parsed = lean.unchanged ? parse_model(file.data(), file.size(), *result.model)
                                     : parse_model(reinterpret_cast<const uint8_t*>(lean.bytes.data()), lean.bytes.size(), *result.model);
  if (!parsed) {
    error = std::string(kNotOnnx) + "protobuf cannot parse the model structure";
    exact_framing_error(error);
    return false;
  }
  if (!check_model_header(*result.model, error)) return false;

  if (io_plan_active() && !note_external_files(*result.model, folder, real_name, path, error)) return false;
  result.path = path;
  result.folder = folder;
  result.name = real_name;
  result.file_size = file.size();
  result.node_spans = std::move(lean.node_spans);
  result.stripped_bytes = lean.stripped_bytes;
  result.stripped_tensors = lean.stripped_tensors;
  result.read_bytes = file.read_bytes();
  out = std::move(result);
  return true;
}

// --- external data ---------------------------------------------------------

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool has_length = false;
};

bool parse_u64(const std::string& s, uint64_t& v) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end;
}

bool parse_external_ref(const onnx::TensorProto& t, ExternalRef& ref,
                        std::string& error) {
  bool has_location = false;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") {
      ref.location = e.value();
      has_location = true;
    } else if (e.key() == "offset") {
      if (!parse_u64(e.value(), ref.offset)) {
        error = "external data: bad offset '" + e.value() + "'";
        return false;
      }
    } else if (e.key() == "length") {
      if (!parse_u64(e.value(), ref.length)) {
        error = "external data: bad length '" + e.value() + "'";
        return false;
      }
      ref.has_length = true;
    }
  }
  if (!has_location || ref.location.empty()) {
    error = "external data: no location";
    return false;
  }
  return true;
}

// Checks an external location (relative, inside the model's folder) and
// opens it there. Absolute paths and paths that climb out of the folder are
// refused before any open(); a symlink or a swap that would lead out of the
// folder is refused by the open itself (open_beneath), so no later step opens
// the path again by name: the bytes read are the bytes of this descriptor, and
// a writer reopens the span with open_external_span, which checks the same way.
bool open_location(const LoadedModel& m, const std::string& location, ExternalSpan& span, int& fd,
                   std::string& error) {
  if (location.find('\0') != std::string::npos) {
    error = "external data: location contains a NUL byte";
    return false;
  }
  const fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_path()) {
    error = "external data: absolute location '" + location + "' refused";
    return false;
  }
  const fs::path normal = loc.lexically_normal();
  if (normal.empty() || *normal.begin() == "..") {
    error = "external data: location '" + location +
            "' escapes the model folder";
    return false;
  }
  const fs::path folder = m.folder.empty() ? fs::path(m.path).parent_path() : fs::path(m.folder);
  span.location = location;
  // The model's own file (weights the loader left on disk) is read as is,
  // even when the model itself was reached through a symlink.
  if (normal == fs::path(m.name.empty() ? fs::path(m.path).filename().string() : m.name)) {
    span.file = m.path;
    span.folder.clear();
    span.beneath.clear();
  } else {
    span.file = (folder / normal).string();
    span.folder = folder.empty() ? "." : folder.string();
    span.beneath = normal.string();
  }
  if (!open_external_span(span, fd, error)) {
    error = "external data '" + location + "': " + error;
    return false;
  }
  return true;
}

// Opens the file of an external reference and checks the byte range against
// its size; `fd` is owned by the caller.
bool open_external(const LoadedModel& m, const onnx::TensorProto& t, ExternalSpan& span, int& fd,
                   std::string& error) {
  ExternalRef ref;
  if (!parse_external_ref(t, ref, error)) return false;
  if (!open_location(m, ref.location, span, fd, error)) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "external data '" + ref.location + "': not a regular file";
    ::close(fd);
    fd = -1;
    return false;
  }
  if (!span.beneath.empty() && !note_read(fd, span.file, "the external data of " + m.path, error)) {
    ::close(fd);
    fd = -1;
    return false;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (ref.offset > size) {
    error = "external data '" + ref.location + "': offset " +
            std::to_string(ref.offset) + " beyond end of file (" +
            std::to_string(size) + " bytes)";
    ::close(fd);
    fd = -1;
    return false;
  }
  const uint64_t length = ref.has_length ? ref.length : size - ref.offset;
  if (length > size - ref.offset) {
    error = "external data '" + ref.location + "': offset " +
            std::to_string(ref.offset) + " + length " + std::to_string(length) +
            " beyond end of file (" + std::to_string(size) + " bytes)";
    ::close(fd);
    fd = -1;
    return false;
  }
  // The dims say how many bytes the tensor has: a declared length that
  // differs is refused before a byte is read (a 3 GiB length on a 4-element
  // tensor must not become a 3 GiB buffer). Widths below a byte (4-bit types)
  // and strings are not checked here.
  if (const size_t width = tensor_element_width(t.data_type()); width != 0) {
    uint64_t need = width;
    bool fits = true;
    for (const int64_t d : t.dims()) {
      if (d < 0 || (d != 0 && need > UINT64_MAX / static_cast<uint64_t>(d))) {
        fits = false;
        break;
      }
      need *= static_cast<uint64_t>(d);
    }
    if (!fits || need != length) {
      error = "external data '" + ref.location + "': " + std::to_string(length) + " bytes" +
              (ref.has_length ? "" : " (to the end of the file)") + ", but its dims need " +
              (fits ? std::to_string(need) : std::string("more than 2^64"));
      ::close(fd);
      fd = -1;
      return false;
    }
  }
  span.offset = ref.offset;
  span.length = length;
  return true;
}

bool read_external(const LoadedModel& m, const onnx::TensorProto& t,
                   std::string& bytes, std::string& error) {
  ExternalSpan span;
  int fd = -1;
  if (!open_external(m, t, span, fd, error)) return false;
  FdGuard guard(fd);
  bytes.resize(static_cast<size_t>(span.length));
  if (!pread_all(fd, span.offset, span.length, bytes.data(), error)) {
    error = "external data '" + span.location + "': " + error;
    return false;
  }
  return true;
}

// --- typed fields -> raw little-endian layout -------------------------------

// Writes the low `width` bytes of v, least significant first, so the result
// is little-endian whatever the host byte order.
void put_le(std::string& out, uint64_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) {
    out.push_back(static_cast<char>(v & 0xff));
    v >>= 8;
  }
}

template <typename Float, typename Bits>
uint64_t float_bits(Float x) {
  static_assert(sizeof(Float) == sizeof(Bits), "size mismatch");
  Bits b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Width in bytes of one element for types stored in int32_data (float16 and
// bfloat16 hold their bit pattern in the low 16 bits), 0 otherwise.
size_t int32_data_width(int data_type) {
  using T = onnx::TensorProto;
  switch (data_type) {
    case T::UINT8:
    case T::INT8:
    case T::BOOL:
      return 1;
    case T::UINT16:
    case T::INT16:
    case T::FLOAT16:
    case T::BFLOAT16:
      return 2;
    case T::INT32:
      return 4;
    default:
      return 0;
  }
}

bool typed_to_raw(const onnx::TensorProto& t, std::string& bytes,
                  std::string& error) {
  using T = onnx::TensorProto;
  bytes.clear();
  const int type = t.data_type();
  if (const size_t width = int32_data_width(type)) {
    bytes.reserve(t.int32_data_size() * width);
    for (int32_t v : t.int32_data())
      put_le(bytes, static_cast<uint32_t>(v), width);
    return true;
  }
  switch (type) {
    case T::FLOAT:
    case T::COMPLEX64:  // real/imaginary pairs, already interleaved
      bytes.reserve(t.float_data_size() * 4);
      for (float v : t.float_data())
        put_le(bytes, float_bits<float, uint32_t>(v), 4);
      return true;
    case T::DOUBLE:
    case T::COMPLEX128:
      bytes.reserve(t.double_data_size() * 8);
      for (double v : t.double_data())
        put_le(bytes, float_bits<double, uint64_t>(v), 8);
      return true;
    case T::INT64:
      bytes.reserve(t.int64_data_size() * 8);
      for (int64_t v : t.int64_data()) put_le(bytes, static_cast<uint64_t>(v), 8);
      return true;
    case T::UINT32:
    case T::UINT64: {
      const size_t width = type == T::UINT32 ? 4 : 8;
      bytes.reserve(t.uint64_data_size() * width);
      for (uint64_t v : t.uint64_data()) put_le(bytes, v, width);
      return true;
    }
    case T::STRING:
      error = "string tensors have no raw byte layout";
      return false;
    default:
      error = "unsupported tensor data type " + std::to_string(type);
      return false;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

bool load_model(const std::string& path, LoadedModel& out, std::string& error, const LoadOptions& options) {
  try {
    return load_model_impl(path, out, error, options);
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unexpected error";
  }
  return false;
}

bool read_tensor_bytes(const LoadedModel& m, const onnx::TensorProto& t,
                       std::string& bytes, std::string& error) {
  try {
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return read_external(m, t, bytes, error);
    if (t.has_raw_data()) {
      bytes = t.raw_data();
      return true;
    }
    return typed_to_raw(t, bytes, error);
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  } catch (const std::exception& e) {
    error = e.what();
  }
  return false;
}

bool open_external_span(const ExternalSpan& span, int& fd, std::string& error) {
  if (span.beneath.empty()) {
    do fd = ::open(span.file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not hang the linter
    while (fd < 0 && errno == EINTR);
    if (fd < 0) error = MappedFile::open_error(errno);
  } else {
    int err = 0;
    fd = open_beneath(span.folder, span.beneath, err);
    // EXDEV: openat2 met a path out of the folder; ELOOP: a symlink where none may be.
    if (fd < 0) error = err == EXDEV || err == ELOOP ? std::string("escapes the model folder") : MappedFile::open_error(err);
  }
  return fd >= 0;
}

bool external_span(const LoadedModel& m, const onnx::TensorProto& t, ExternalSpan& span, std::string& error) {
  try {
    int fd = -1;
    if (!open_external(m, t, span, fd, error)) return false;
    ::close(fd);
    return true;
  } catch (const std::exception& e) {
    error = e.what();
  }
  return false;
}

void set_external_data(onnx::TensorProto& t, const std::string& location, uint64_t offset, uint64_t length) {
  t.clear_raw_data();
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : {std::pair<const char*, std::string>{"location", location},
                                   {"offset", std::to_string(offset)},
                                   {"length", std::to_string(length)}}) {
    auto* e = t.add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
}

bool is_self_reference(const LoadedModel& m, const onnx::TensorProto& t) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return false;
  const std::string self = m.name.empty() ? basename_of(m.path) : m.name;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location")
      return fs::path(e.value()).lexically_normal() == fs::path(self);
  }
  return false;
}

void set_parse_split_from(size_t entries) { parse_split_from.store(entries, std::memory_order_relaxed); }

std::unique_ptr<google::protobuf::Arena> make_bulk_arena() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 16 << 20;
  options.block_alloc = bulk_allocate;
  options.block_dealloc = bulk_free;
  return std::make_unique<google::protobuf::Arena>(options);
}

}  // namespace bpulint
