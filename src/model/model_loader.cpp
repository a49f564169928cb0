// See model_loader.h for the why. Layout of this file:
//   1. MappedFile      - read-only view of the model file (mmap, read() fallback)
//   2. wire primitives - varint encode, FieldReader that validates as it goes
//   3. LeanEncoder     - re-encodes the model, replacing big raw_data payloads
//                        with external-data self-references
//   4. load_model, read_tensor_bytes, is_self_reference
#include "bpulint/model_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>

#include "bpulint/bulk_memory.h"
#include "bpulint/side_by_side.h"

namespace bpulint {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxDepth = 64;                        // message nesting levels
constexpr uint64_t kMaxLeanSize = INT_MAX;           // protobuf's parse limit
constexpr const char* kNotOnnx = "not an ONNX model: ";

// ---------------------------------------------------------------------------
// 1. MappedFile
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
// are never read from disk (with read-ahead off, see open); if mmap is
// unavailable we fall back to read().
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile() {
    if (map_ != nullptr) ::munmap(map_, static_cast<size_t>(size_));
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool open(const std::string& path, std::string& error) {
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
      return true;
    }
    fallback_.resize(static_cast<size_t>(size_));
    if (!pread_all(fd, 0, size_, fallback_.data(), error)) return false;
    data_ = reinterpret_cast<const uint8_t*>(fallback_.data());
    return true;
  }

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  bool mapped() const { return map_ != nullptr; }

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
};

// ---------------------------------------------------------------------------
// 2. Wire primitives
// ---------------------------------------------------------------------------

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_tag(std::string& out, uint32_t field, WireType wt) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | wt);
}

void put_bytes_field(std::string& out, uint32_t field, const std::string& s) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, s.size());
  out += s;
}

// One field as it sits in the file. All offsets are absolute file offsets.
struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t start = 0;    // first byte of the tag
  uint64_t payload = 0;  // first byte after tag (and length, if delimited)
  uint64_t end = 0;      // one past the last byte of the field
  uint64_t value = 0;    // varint value (kVarint fields only)
};

// Iterates over the fields of one message occupying [begin, end) of the
// file, validating tags, varints and lengths against the message bounds.
// Error texts name the absolute byte offset so a broken file can be
// inspected with a hex dump.
class FieldReader {
 public:
  FieldReader(const uint8_t* data, uint64_t begin, uint64_t end)
      : data_(data), pos_(begin), end_(end) {}

  bool done() const { return pos_ >= end_; }
  uint64_t position() const { return pos_; }

  bool next(Field& f, std::string& error) {
    f = Field{};
    f.start = pos_;
    uint64_t tag = 0;
    if (!read_varint(tag, error)) return false;
    if (tag > UINT32_MAX) return fail(error, "invalid tag", f.start);
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire_type = static_cast<uint32_t>(tag & 7);
    if (f.number == 0) return fail(error, "field number 0", f.start);
    switch (f.wire_type) {
      case kVarint:
        if (!read_varint(f.value, error)) return false;
        f.payload = f.start;
        break;
      case kFixed64:
        if (!skip_fixed(f, 8, error)) return false;
        break;
      case kFixed32:
        if (!skip_fixed(f, 4, error)) return false;
        break;
      case kLengthDelimited:
        if (!skip_delimited(f, error)) return false;
        break;
      default:  // groups (3, 4) are not used by ONNX; 6 and 7 do not exist
        return fail(error, "unsupported wire type " +
                               std::to_string(f.wire_type) + " in field " +
                               std::to_string(f.number),
                    f.start);
    }
    f.end = pos_;
    return true;
  }

 private:
  static bool fail(std::string& error, const std::string& what,
                   uint64_t at) {
    error = kNotOnnx + what + " at byte " + std::to_string(at);
    return false;
  }

  // Most tags and lengths are one byte: that case stays small enough to inline.
  bool read_varint(uint64_t& v, std::string& error) {
    if (pos_ < end_ && data_[pos_] < 0x80) {
      v = data_[pos_++];
      return true;
    }
    return read_long_varint(v, error);
  }

  bool read_long_varint(uint64_t& v, std::string& error) {
    const uint64_t start = pos_;
    v = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos_ >= end_) return fail(error, "truncated varint", start);
      const uint8_t b = data_[pos_++];
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) return true;
    }
    return fail(error, "varint longer than 10 bytes", start);
  }

  bool skip_fixed(Field& f, uint64_t width, std::string& error) {
    f.payload = pos_;
    if (width > end_ - pos_) return truncated(f, width, error);
    pos_ += width;
    return true;
  }

  bool skip_delimited(Field& f, std::string& error) {
    uint64_t length = 0;
    if (!read_varint(length, error)) return false;
    f.payload = pos_;
    // Compare against what is left rather than computing pos_ + length,
    // which could overflow for a hostile 64-bit length.
    if (length > end_ - pos_) return truncated(f, length, error);
    pos_ += length;
    return true;
  }

  bool truncated(const Field& f, uint64_t wanted, std::string& error) const {
    error = std::string(kNotOnnx) + "truncated at byte " +
            std::to_string(f.payload) + " (field " + std::to_string(f.number) +
            " declares " + std::to_string(wanted) + " bytes, " +
            std::to_string(end_ - pos_) + " left)";
    return false;
  }

  const uint8_t* data_;
  uint64_t pos_;
  uint64_t end_;
};

// ---------------------------------------------------------------------------
// 3. LeanEncoder
// ---------------------------------------------------------------------------

// The message types on the paths from ModelProto down to TensorProto. Only
// these are re-encoded; every other field is copied verbatim with its tag.
enum class Kind {
  kModel,
  kGraph,
  kNode,
  kAttribute,
  kFunction,
  kTrainingInfo,
  kSparseTensor,
  kTensor,
  kOther,  // not on a tensor path: copy verbatim
};

// Field numbers from onnx.proto (ONNX 1.12).
Kind child_kind(Kind parent, uint32_t field) {
  switch (parent) {
    case Kind::kModel:
      if (field == 7) return Kind::kGraph;          // graph
      if (field == 20) return Kind::kTrainingInfo;  // training_info
      if (field == 25) return Kind::kFunction;      // functions
      break;
    case Kind::kGraph:
      if (field == 1) return Kind::kNode;           // node
      if (field == 5) return Kind::kTensor;         // initializer
      if (field == 15) return Kind::kSparseTensor;  // sparse_initializer
      break;
    case Kind::kNode:
      if (field == 5) return Kind::kAttribute;  // attribute
      break;
    case Kind::kAttribute:
      if (field == 5 || field == 10) return Kind::kTensor;  // t, tensors
      if (field == 6 || field == 11) return Kind::kGraph;   // g, graphs
      if (field == 22 || field == 23) return Kind::kSparseTensor;
      break;
    case Kind::kFunction:
      if (field == 7) return Kind::kNode;  // node
      break;
    case Kind::kTrainingInfo:
      if (field == 1 || field == 2) return Kind::kGraph;  // init, algorithm
      break;
    case Kind::kSparseTensor:
      if (field == 1 || field == 2) return Kind::kTensor;  // values, indices
      break;
    case Kind::kTensor:
    case Kind::kOther:
      break;
  }
  return Kind::kOther;
}

// TensorProto field numbers we care about.
constexpr uint32_t kRawData = 9;
constexpr uint32_t kExternalData = 13;
constexpr uint32_t kDataLocation = 14;
constexpr uint64_t kLocationExternal = 1;  // TensorProto.DataLocation.EXTERNAL
// Up-front reservations are capped: they are an optimisation, not a promise.
constexpr uint64_t kReserveCap = 64ull << 20;

class LeanEncoder {
 public:
  // `mapped`: data is a memory mapping with read-ahead off; the encoder reads
  // ahead itself (see prefetch).
  LeanEncoder(const uint8_t* data, uint64_t size, std::string self_location, bool mapped)
      : data_(data), size_(size), self_location_(std::move(self_location)), mapped_(mapped) {}

  // A dry pass first: when no payload needs stripping (small-weight graphs)
  // the file itself is the lean model and no copy is made (`unchanged`).
  bool encode(std::string& lean, bool& unchanged, std::string& error) {
    if (!encode_message(Kind::kModel, 0, size_, 1, nullptr)) {
      error = error_;
      return false;
    }
    unchanged = stripped_tensors == 0;
    if (unchanged) return true;
    node_spans.clear();
    stripped_bytes = 0;
    stripped_tensors = 0;
    lean.reserve(static_cast<size_t>(std::min<uint64_t>(size_, kReserveCap)));
    if (!encode_message(Kind::kModel, 0, size_, 1, &lean)) {
      error = error_;
      return false;
    }
    return true;
  }

  // Every field of every tensor read (encode skips small tensors' fields):
  // false with the first place the framing breaks, for the error message.
  bool check_framing(std::string& error) {
    skip_small_tensors_ = false;
    if (encode_message(Kind::kModel, 0, size_, 1, nullptr)) return true;
    error = error_;
    return false;
  }

  std::vector<ByteSpan> node_spans;
  uint64_t stripped_bytes = 0;
  size_t stripped_tensors = 0;

 private:
  // Appends the lean encoding of the message at [begin, end) (its payload,
  // without tag/length) to `out`. `depth` is this message's nesting level.
  bool encode_message(Kind kind, uint64_t begin, uint64_t end, int depth,
                      std::string* out) {
    if (kind == Kind::kTensor) return encode_tensor(begin, end, out);
    FieldReader reader(data_, begin, end);
    Field f;
    while (!reader.done()) {
      prefetch(reader.position());
      if (!reader.next(f, error_)) return false;
      const Kind child = child_kind(kind, f.number);
      if (child == Kind::kOther || f.wire_type != kLengthDelimited) {
        // Wrong wire types are copied too: protobuf will reject them later.
        copy(f.start, f.end, out);
      } else if (!encode_child(child, f, depth + 1, out)) {
        return false;
      }
      if (out != nullptr && out->size() > kMaxLeanSize) {
        error_ = "model structure exceeds 2 GiB";
        return false;
      }
    }
    return true;
  }

  // Re-encodes a sub-message into a scratch buffer first, because its
  // length prefix may shrink when payloads are stripped.
  bool encode_child(Kind kind, const Field& f, int depth, std::string* out) {
    if (depth > kMaxDepth) {
      error_ = "nesting deeper than " + std::to_string(kMaxDepth) + " levels";
      return false;
    }
    // Recorded before descending so that nested nodes follow their parent.
    if (kind == Kind::kNode) node_spans.push_back({f.payload, f.end - f.payload});
    if (out == nullptr) return encode_message(kind, f.payload, f.end, depth, nullptr);
    std::string body;
    // Stripping only shrinks a message, so its original size bounds the body.
    body.reserve(static_cast<size_t>(std::min<uint64_t>(f.end - f.payload, kReserveCap)));
    if (!encode_message(kind, f.payload, f.end, depth, &body)) return false;
    put_tag(*out, f.number, kLengthDelimited);
    put_varint(*out, body.size());
    *out += body;
    return true;
  }

  // TensorProto: fields may come in any order (raw_data before dims, ...),
  // so a first pass decides whether to strip and a second pass copies.
  bool encode_tensor(uint64_t begin, uint64_t end, std::string* out) {
    // A tensor no longer than the limit cannot hold a payload to strip (most
    // initializers of a big graph): copied without reading its fields, which
    // protobuf checks when it parses them (check_framing says where it broke).
    if (skip_small_tensors_ && end - begin <= kInlinePayloadLimit) {
      copy(begin, end, out);
      return true;
    }
    prefetch(begin);
    Field raw;  // the last raw_data wins, as in protobuf
    bool has_raw = false;
    bool already_external = false;
    FieldReader scan(data_, begin, end);
    Field f;
    while (!scan.done()) {
      if (!scan.next(f, error_)) return false;
      if (f.number == kRawData && f.wire_type == kLengthDelimited) {
        raw = f;
        has_raw = true;
      }
      if (f.number == kExternalData || f.number == kDataLocation)
        already_external = true;
    }
    const uint64_t raw_length = has_raw ? raw.end - raw.payload : 0;
    if (!has_raw || already_external || raw_length <= kInlinePayloadLimit) {
      copy(begin, end, out);
      return true;
    }
    // Copy everything except raw_data; its bytes are never touched.
    FieldReader copier(data_, begin, end);
    while (!copier.done()) {
      if (!copier.next(f, error_)) return false;
      if (!(f.number == kRawData && f.wire_type == kLengthDelimited))
        copy(f.start, f.end, out);
    }
    if (out != nullptr) append_self_reference(raw.payload, raw_length, *out);
    stripped_bytes += raw_length;
    ++stripped_tensors;
    return true;
  }

  void append_self_reference(uint64_t offset, uint64_t length,
                             std::string& out) const {
    put_tag(out, kDataLocation, kVarint);
    put_varint(out, kLocationExternal);
    append_entry("location", self_location_, out);
    append_entry("offset", std::to_string(offset), out);
    append_entry("length", std::to_string(length), out);
  }

  // One StringStringEntryProto (key = 1, value = 2) in external_data.
  static void append_entry(const std::string& key, const std::string& value,
                           std::string& out) {
    std::string entry;
    put_bytes_field(entry, 1, key);
    put_bytes_field(entry, 2, value);
    put_bytes_field(out, kExternalData, entry);
  }

  void copy(uint64_t begin, uint64_t end, std::string* out) const {
    if (out == nullptr) return;
    out->append(reinterpret_cast<const char*>(data_ + begin), static_cast<size_t>(end - begin));
  }

  // Read-ahead by hand: the kernel's would also read the weights the walk
  // skips. When the walk reaches past what was requested, the next window
  // is requested; a window reaches at most kPrefetchWindow into a payload
  // that is then skipped, so a cold lint reads the graph plus a bounded
  // amount per large tensor, and a graph-only file still streams in. The
  // window is mapped in one call where the kernel can (random access also
  // turns off mapping neighbouring cached pages on a fault, so a warm file
  // would otherwise cost one fault per page).
  void prefetch(uint64_t pos) {
    if (!mapped_ || pos < prefetched_) return;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t from = pos / page * page;
    const uint64_t to = std::min(size_, from + kPrefetchWindow);
    uint8_t* addr = const_cast<uint8_t*>(data_) + from;
    const auto length = static_cast<size_t>(to - from);
    prefetched_ = to;
    // Read this window and the next in large requests (random access would
    // read page by page), then map this one.
    const auto ahead = static_cast<size_t>(std::min(size_, to + kPrefetchWindow) - from);
    (void)::madvise(addr, ahead, MADV_WILLNEED);
#ifdef MADV_POPULATE_READ
    (void)::madvise(addr, length, MADV_POPULATE_READ);  // older kernels: fault page by page
#endif
  }
  static constexpr uint64_t kPrefetchWindow = 1ull << 20;

  const uint8_t* data_;
  uint64_t size_;
  std::string self_location_;
  bool mapped_ = false;
  bool skip_small_tensors_ = true;  // see encode_tensor
  uint64_t prefetched_ = 0;
  std::string error_;
};

// ---------------------------------------------------------------------------
// 4. Helpers for the public functions
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

bool load_model_impl(const std::string& path, LoadedModel& out,
                     std::string& error) {
  MappedFile file;
  if (!file.open(path, error)) return false;

  // The real file's folder and name, through any symlink: external data
  // (and the loader's own self-references) resolve there.
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  const std::string real_name = ec ? basename_of(path) : real.filename().string();
  std::string folder = ec ? fs::path(path).parent_path().string() : real.parent_path().string();
  if (folder.empty()) folder = ".";
  LeanEncoder encoder(file.data(), file.size(), real_name, file.mapped());
  std::string lean;
  bool unchanged = false;
  // Where the framing breaks, said as a scan of every field finds it first.
  const auto exact_framing_error = [&](std::string& message) {
    LeanEncoder framing(file.data(), file.size(), real_name, false);
    std::string first_break;
    if (!framing.check_framing(first_break)) message = first_break;
  };
  if (!encoder.encode(lean, unchanged, error)) {
    exact_framing_error(error);
    return false;
  }
  if (unchanged && file.size() > kMaxLeanSize) {
    error = "model structure exceeds 2 GiB";
    return false;
  }

  LoadedModel result;
  result.arena = make_bulk_arena();
  result.model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(result.arena.get());
  const bool parsed = unchanged ? parse_model(file.data(), file.size(), *result.model)
                                : parse_model(reinterpret_cast<const uint8_t*>(lean.data()), lean.size(), *result.model);
  if (!parsed) {
    error = std::string(kNotOnnx) + "protobuf cannot parse the model structure";
    exact_framing_error(error);
    return false;
  }
  if (!check_model_header(*result.model, error)) return false;

  result.path = path;
  result.folder = folder;
  result.name = real_name;
  result.file_size = file.size();
  result.node_spans = std::move(encoder.node_spans);
  result.stripped_bytes = encoder.stripped_bytes;
  result.stripped_tensors = encoder.stripped_tensors;
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

// Resolves an external location against the model's folder. Absolute paths
// and paths that climb out of the folder are refused before any open(), so a
// malicious model cannot make the linter read arbitrary files.
bool resolve_location(const LoadedModel& m, const std::string& location,
                      fs::path& resolved, std::string& error) {
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
  resolved = folder / normal;
  // The model's own file (weights the loader left on disk) is read as is,
  // even when the model itself was reached through a symlink.
  if (normal == fs::path(m.name.empty() ? fs::path(m.path).filename().string() : m.name)) {
    resolved = m.path;
    return true;
  }
  // A symlink inside the folder may still point outside it: compare the real
  // paths, component by component.
  std::error_code ec;
  const fs::path real_folder = fs::weakly_canonical(fs::absolute(folder.empty() ? fs::path(".") : folder), ec);
  const fs::path real_file = ec ? fs::path() : fs::weakly_canonical(fs::absolute(resolved), ec);
  if (ec || std::mismatch(real_folder.begin(), real_folder.end(), real_file.begin(), real_file.end()).first !=
                real_folder.end()) {
    error = "external data: location '" + location + "' escapes the model folder";
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
  fs::path file;
  if (!resolve_location(m, ref.location, file, error)) return false;

  // O_NONBLOCK as in MappedFile::open: a FIFO must not hang the linter.
  fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = "external data '" + ref.location +
            "': " + MappedFile::open_error(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "external data '" + ref.location + "': not a regular file";
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
  span.file = file.string();
  span.location = ref.location;
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

bool load_model(const std::string& path, LoadedModel& out, std::string& error) {
  try {
    return load_model_impl(path, out, error);
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
