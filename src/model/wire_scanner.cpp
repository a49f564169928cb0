// The loader's wire scanner (wire_scanner.h): field writing, and the lean encoder
// that walks a model file with FieldReader. What the wire format means is here;
// how the file is read and the model assembled is in model_loader.cpp.
#include "wire_scanner.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace bpulint {

// ---------------------------------------------------------------------------
// Wire primitives (the reading side, Field and FieldReader, is in the header)
// ---------------------------------------------------------------------------

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

namespace {

// Subgraphs (If/Loop/Scan bodies) nest at most 20 levels: each level is three
// message levels (node, attribute, graph), and 64 message levels in all keep
// every parse of the model within protobuf's default recursion limit (100),
// which other tools reading the model (onnx, onnxruntime) keep too.
constexpr int kMaxSubgraphLevels = 20;
constexpr int kMaxDepth = 3 * kMaxSubgraphLevels + 4;  // message nesting levels

// What one model may hold, checked while its bytes are scanned, before any
// parse: the memory of a lint grows with these (each node costs 2-3 KiB in the
// engine, each name is copied into paths and messages), not with the bytes
// that encode them (an empty node record is 2 bytes). Far above real exports:
// swin_t has 6,000 nodes, the largest names are a few hundred bytes.
constexpr uint64_t kMaxNodes = uint64_t{1} << 20;          // in all graphs and functions
constexpr uint64_t kMaxNodeInputs = uint64_t{1} << 16;     // inputs (or outputs) of one node
constexpr uint64_t kMaxNameBytes = uint64_t{1} << 20;      // a node's name, op type, input or output name

// ---------------------------------------------------------------------------
// LeanEncoder
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
  // `reads`: asked for every byte before it is looked at (null: all in memory).
  LeanEncoder(const uint8_t* data, uint64_t size, std::string self_location, SkeletonReads* reads)
      : data_(data), size_(size), self_location_(std::move(self_location)), reads_(reads) {}

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
    uint64_t inputs = 0, outputs = 0;
    while (!reader.done()) {
      need(reader.position(), kFieldHead);
      if (!reader.next(f, error_)) return false;
      if (kind == Kind::kNode && !node_within_limits(f, inputs, outputs)) return false;
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

  // One field of a node against the limits above (node fields 1-4: input,
  // output, name, op_type).
  bool node_within_limits(const Field& f, uint64_t& inputs, uint64_t& outputs) {
    if (f.wire_type != kLengthDelimited || f.number < 1 || f.number > 4) return true;
    if (f.end - f.payload > kMaxNameBytes) {
      static const char* const kWhat[] = {"", "an input name", "an output name", "a name", "an op type"};
      error_ = "a node has " + std::string(kWhat[f.number]) + " of " + std::to_string(f.end - f.payload) +
               " bytes; bpu-lint reads names of at most " + std::to_string(kMaxNameBytes >> 20) + " MiB";
      return false;
    }
    uint64_t& n = f.number == 1 ? inputs : outputs;
    if (f.number <= 2 && ++n > kMaxNodeInputs) {
      error_ = std::string("a node has more than ") + std::to_string(kMaxNodeInputs) +
               (f.number == 1 ? " inputs" : " outputs") + "; bpu-lint reads at most that many";
      return false;
    }
    return true;
  }

  // Re-encodes a sub-message into a scratch buffer first, because its
  // length prefix may shrink when payloads are stripped.
  bool encode_child(Kind kind, const Field& f, int depth, std::string* out) {
    if (depth > kMaxDepth) {
      error_ = "subgraphs nested deeper than " + std::to_string(kMaxSubgraphLevels) + " levels (" +
               std::to_string(kMaxDepth) + " protobuf message levels)";
      return false;
    }
    // Recorded before descending so that nested nodes follow their parent.
    if (kind == Kind::kNode) {
      if (node_spans.size() >= kMaxNodes) {
        error_ = "more than " + std::to_string(kMaxNodes) + " nodes; bpu-lint reads at most that many";
        return false;
      }
      node_spans.push_back({f.payload, f.end - f.payload});
    }
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
    Field raw;  // the last raw_data wins, as in protobuf
    bool has_raw = false;
    bool already_external = false;
    FieldReader scan(data_, begin, end);
    Field f;
    while (!scan.done()) {
      need(scan.position(), kFieldHead);
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

  void copy(uint64_t begin, uint64_t end, std::string* out) {
    if (out == nullptr) return;
    need(begin, end - begin);
    out->append(reinterpret_cast<const char*>(data_ + begin), static_cast<size_t>(end - begin));
  }

  void need(uint64_t pos, uint64_t n) {
    if (reads_ != nullptr) reads_->need(pos, n);
  }
  // What FieldReader::next reads of a field: a tag and a length, each a varint
  // of at most 10 bytes (a longer one is an error).
  static constexpr uint64_t kFieldHead = 20;

  const uint8_t* data_;
  uint64_t size_;
  std::string self_location_;
  SkeletonReads* reads_;
  bool skip_small_tensors_ = true;  // see encode_tensor
  std::string error_;
};

}  // namespace

bool encode_lean_copy(const uint8_t* data, uint64_t size, const std::string& self_location, SkeletonReads* reads,
                      LeanCopy& out, std::string& error) {
  LeanEncoder encoder(data, size, self_location, reads);
  if (!encoder.encode(out.bytes, out.unchanged, error)) return false;
  out.node_spans = std::move(encoder.node_spans);
  out.stripped_bytes = encoder.stripped_bytes;
  out.stripped_tensors = encoder.stripped_tensors;
  return true;
}

bool check_framing(const uint8_t* data, uint64_t size, SkeletonReads* reads, std::string& error) {
  LeanEncoder framing(data, size, std::string(), reads);
  return framing.check_framing(error);
}

}  // namespace bpulint
