// fuzz_skeleton_reads: the loader's reads (src/model/skeleton_reads.h). Each
// input is a model file two ways: the bytes as they are, and a layout built
// from them (a graph of nodes, then initializers whose payloads run from a
// byte to 512 KiB, raw_data before or after their other fields, the file
// optionally cut short or with one byte changed), so that files of many
// pages reach the read windows. Each file is loaded twice: strict (pages not asked for stay unreadable, so a read the
// scanner did not ask for crashes) and as the CLI loads it.
// Invariants: both loads agree (result, error text, model, bytes read); the
// bytes read cover the skeleton (everything not left on disk) and stay
// within three times it plus four pages per stripped tensor.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "bpulint/model/model_loader.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_field(std::string& out, uint32_t field, const std::string& body) {
  put_varint(out, (uint64_t{field} << 3) | 2);
  put_varint(out, body.size());
  out += body;
}

// A model file: opset, then a graph of `nodes` Relu nodes and initializers.
std::string build_layout(FuzzedDataProvider& in) {
  std::string graph;
  const int nodes = in.ConsumeIntegralInRange<int>(0, 3000);
  const size_t name_length = in.ConsumeIntegralInRange<size_t>(1, 64);
  for (int i = 0; i < nodes; ++i) {
    std::string node;
    put_field(node, 1, i == 0 ? "x" : "t" + std::to_string(i - 1));  // input
    put_field(node, 2, "t" + std::to_string(i));                      // output
    put_field(node, 3, std::string(name_length, 'n') + std::to_string(i));
    put_field(node, 4, "Relu");
    put_field(graph, 1, node);
  }
  put_field(graph, 2, "g");
  const int tensors = in.ConsumeIntegralInRange<int>(0, 64);
  for (int i = 0; i < tensors && in.remaining_bytes() > 0; ++i) {
    // log-uniform: as many 1-2 KiB payloads as 256-512 KiB ones
    const int bits = in.ConsumeIntegralInRange<int>(0, 18);
    const size_t payload = (size_t{1} << bits) + in.ConsumeIntegralInRange<size_t>(0, (size_t{1} << bits) - 1);
    std::string tensor;
    put_varint(tensor, (1u << 3) | 0);  // dims
    put_varint(tensor, payload);
    put_varint(tensor, (2u << 3) | 0);  // data_type UINT8
    put_varint(tensor, 2);
    put_field(tensor, 8, "w" + std::to_string(i));
    if (in.ConsumeBool()) {
      put_field(tensor, 9, std::string(payload, '\x5a'));  // raw_data
    } else {  // raw_data before dims, as some writers order it
      std::string first;
      put_field(first, 9, std::string(payload, '\x5a'));
      tensor = first + tensor;
    }
    put_field(graph, 5, tensor);
  }
  std::string model;
  put_varint(model, (1u << 3) | 0);  // ir_version 8
  put_varint(model, 8);
  std::string opset;
  put_varint(opset, (2u << 3) | 0);
  put_varint(opset, 13);
  put_field(model, 8, opset);
  put_field(model, 7, graph);
  if (in.ConsumeBool() && !model.empty()) {
    const size_t at = in.ConsumeIntegralInRange<size_t>(0, model.size() - 1);
    if (in.ConsumeBool()) {
      model.resize(at);  // cut short
    } else {
      model[at] = static_cast<char>(in.ConsumeIntegral<uint8_t>());
    }
  }
  return model;
}

void check_file(const std::string& path) {
  LoadedModel strict, plain;
  std::string strict_error, plain_error;
  const bool strict_ok = load_model(path, strict, strict_error, LoadOptions{/*strict_reads=*/true});
  const bool plain_ok = load_model(path, plain, plain_error);
  FUZZ_CHECK(strict_ok == plain_ok, "strict load " + std::string(strict_ok ? "passed" : "failed: " + strict_error));
  FUZZ_CHECK(strict_error == plain_error, strict_error + " / " + plain_error);
  if (!plain_ok) {
    FUZZ_CHECK(!plain_error.empty() && plain_error.find('\n') == std::string::npos, "bad error: " + plain_error);
    return;
  }
  FUZZ_CHECK(strict.model->SerializeAsString() == plain.model->SerializeAsString(), "the loads differ");
  FUZZ_CHECK(strict.read_bytes == plain.read_bytes, "the loads read differently");
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t skeleton = plain.file_size - plain.stripped_bytes;
  FUZZ_CHECK(plain.read_bytes >= skeleton && plain.read_bytes <= plain.file_size,
             "read " + std::to_string(plain.read_bytes) + " of a skeleton of " + std::to_string(skeleton));
  FUZZ_CHECK(plain.read_bytes <= 3 * skeleton + 4 * page * (plain.stripped_tensors + 1),
             "read " + std::to_string(plain.read_bytes) + " for a skeleton of " + std::to_string(skeleton) + " and " +
                 std::to_string(plain.stripped_tensors) + " stripped tensors");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::temp_dir() + "/model.onnx";
  fuzz::write_bytes(path, data, size);
  check_file(path);
  FuzzedDataProvider in(data, size);
  const std::string built = build_layout(in);
  fuzz::write_bytes(path, reinterpret_cast<const uint8_t*>(built.data()), built.size());
  check_file(path);
  return 0;
}
