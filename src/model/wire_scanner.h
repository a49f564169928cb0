// The protobuf wire format as the loader reads and writes it: FieldReader walks
// one message's fields in memory, checking them as it goes, and the lean encoder
// copies a model with its big payloads left on disk. Internal to src/model/.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bpulint/model/model_loader.h"
#include "skeleton_reads.h"

namespace bpulint {

constexpr uint64_t kMaxLeanSize = INT_MAX;           // protobuf's parse limit
constexpr const char* kNotOnnx = "not an ONNX model: ";

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

void put_varint(std::string& out, uint64_t v);
void put_tag(std::string& out, uint32_t field, WireType wt);
void put_bytes_field(std::string& out, uint32_t field, const std::string& s);

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

// The lean copy of a model file (model_loader.h says why) and what the
// encoder found on the way, for LoadedModel's fields of the same names.
struct LeanCopy {
  std::string bytes;
  bool unchanged = false;  // nothing to strip: the file itself is the lean copy
  std::vector<ByteSpan> node_spans;
  uint64_t stripped_bytes = 0;
  size_t stripped_tensors = 0;
};

// Re-encodes the model in [data, data + size), replacing every raw_data payload
// over kInlinePayloadLimit with an external-data reference to `self_location`
// (the file's name). `reads`: asked for every byte before it is read (null: data
// is all in memory). A dry pass first: when no payload needs stripping
// (small-weight graphs) the file itself is the lean copy and no copy is made.
bool encode_lean_copy(const uint8_t* data, uint64_t size, const std::string& self_location, SkeletonReads* reads,
                      LeanCopy& out, std::string& error);

// Every field of every tensor read (encode_lean_copy skips small tensors'
// fields): false with the first place the framing breaks, for the error message.
bool check_framing(const uint8_t* data, uint64_t size, SkeletonReads* reads, std::string& error);

}  // namespace bpulint
