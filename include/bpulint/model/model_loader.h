// Loads an ONNX model without paying for its weights.
//
// Linting looks at structure, not at weight values, so the loader never
// reads large tensor payloads: it memory-maps the file with the kernel's
// read-ahead off, walks the protobuf wire format itself, reading only the
// bytes it looks at (the graph, and a page or two per large tensor's header:
// src/model/skeleton_reads.h), and re-encodes a *lean* copy in which every large
// raw_data payload is replaced by an ONNX external-data reference pointing
// back into the model file (location = the file's basename, offset/length =
// where the payload sits). That is ordinary, valid ONNX, so the lean copy is
// parsed by protobuf as usual and downstream code (shape inference, facts,
// fixes) simply sees a model whose big tensors are external. Bytes are
// fetched on demand with read_tensor_bytes().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <google/protobuf/arena.h>
#include <onnx/onnx_pb.h>

#include <memory>

namespace bpulint {

// A byte range of the model file.
struct ByteSpan {
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct LoadedModel {
  std::string path;          // as given by the user
  // Where external data resolves: the folder of the model file itself, and
  // its name there (a model reached through a symlink keeps its data beside
  // the file the link leads to). Self-references made by the loader use `name`.
  std::string folder;
  std::string name;
  uint64_t file_size = 0;
  // The lean copy (large payloads are external). It lives on an arena: parsing
  // and freeing a 100k-node graph is about twice as fast as on the heap.
  std::unique_ptr<google::protobuf::Arena> arena;
  onnx::ModelProto* model = nullptr;
  // Byte span (payload, after tag+length) of every NodeProto in the file, in
  // the order they start in the file: pre-order, so the nodes of a node's
  // attribute subgraphs come right after it, before its next sibling.
  // Includes GraphProto.node (at any depth) and FunctionProto.node.
  std::vector<ByteSpan> node_spans;
  uint64_t stripped_bytes = 0;   // payload bytes left on disk
  size_t stripped_tensors = 0;
  // Bytes of the file the loader asked the kernel to read (the whole file
  // when it could not be mapped).
  uint64_t read_bytes = 0;
};

struct LoadOptions {
  // Pages of the file the loader did not ask for stay unreadable, so a stray
  // read crashes: for the fuzz target and the tests that prove every read is
  // asked for (and so counted in read_bytes).
  bool strict_reads = false;
};

// An arena for messages built by the thousand (a graph's nodes, the types the
// walk infers): blocks from 64 KiB to 16 MiB, where protobuf's default stops at
// 8 KiB (a malloc per 8 KiB of a 100k-node graph).
std::unique_ptr<google::protobuf::Arena> make_bulk_arena();

// For the fuzz targets: graphs of at least `entries` nodes and initializers
// are parsed in two halves on two threads (default 4096; 2 sends small inputs
// down that path too).
void set_parse_split_from(size_t entries);

// raw_data payloads larger than this are left on disk; smaller ones (shape
// vectors, scalars, axes...) stay inline so shape inference can read them.
constexpr uint64_t kInlinePayloadLimit = 4096;

// Loads `path` into `out`. On failure returns false and sets `error` to a
// one-line message without a path prefix (the caller adds "<path>: "), e.g.
// "no such file", "is a directory", "empty file",
// "not an ONNX model: truncated at byte 812 (field 7 declares 4096 bytes,
// 300 left)", "not an ONNX model: no graph", "nesting deeper than 64 levels".
// Never throws; `out` is only modified on success.
bool load_model(const std::string& path, LoadedModel& out, std::string& error, const LoadOptions& options = {});

// The tensor's data in ONNX raw little-endian layout: raw_data as is, typed
// fields (float_data, int32_data incl. the narrow types stored there,
// int64_data, double_data, uint64_data) converted, or external data read from
// disk (self-references made by load_model and real external files).
// External locations that are absolute or escape the model's folder are
// refused without being opened. A missing "length" means "to end of file".
bool read_tensor_bytes(const LoadedModel& m, const onnx::TensorProto& t,
                       std::string& bytes, std::string& error);

// Where an external tensor's bytes are: the file (resolved and checked as
// read_tensor_bytes does) and the byte range, checked against the file's size
// now. Lets a writer copy the bytes file to file instead of through memory.
struct ExternalSpan {
  std::string file;      // the path (messages, and a key for reusing its descriptor)
  std::string location;  // as the model names it (for messages)
  std::string folder;    // the model's folder, and the file's normal path below it;
  std::string beneath;   //   both empty for the model file itself
  uint64_t offset = 0;
  uint64_t length = 0;
};
bool external_span(const LoadedModel& m, const onnx::TensorProto& t, ExternalSpan& span, std::string& error);
// Opens a span's file again, as external_span checked it: beneath the model's
// folder, never through a symlink or a swap that leads out of it.
bool open_external_span(const ExternalSpan& span, int& fd, std::string& error);

// Makes t's data the `length` bytes at `offset` of the file `location` (ONNX
// external data), dropping whatever data it held.
void set_external_data(onnx::TensorProto& t, const std::string& location, uint64_t offset, uint64_t length);

// True when t's data was left on disk by load_model (its external location
// is the model file itself).
bool is_self_reference(const LoadedModel& m, const onnx::TensorProto& t);

}  // namespace bpulint
