// The model writer: every payload copied into the output (streamed, byte for
// byte what serializing the embedded model gives), never a reference into the
// source's files; a fixed model with its own .data file can move.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "bpulint/fix/fix_apply.h"
#include "bpulint/model/model_loader.h"
#include "bpulint/model/model_writer.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;
namespace fs = std::filesystem;

namespace {

// Random bits (finite floats) in raw_data, then a field after raw_data.
onnx::TensorProto random_raw_tensor(const std::string& name, const std::vector<int64_t>& dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::string raw(static_cast<size_t>(element_count(dims)) * 4, '\0');
  for (auto& c : raw) c = static_cast<char>(rng() & 0xff);
  for (size_t i = 3; i < raw.size(); i += 4) raw[i] = static_cast<char>(raw[i] & 0x3f);  // finite floats
  std::vector<float> values(raw.size() / 4);
  if (!raw.empty()) std::memcpy(values.data(), raw.data(), raw.size());
  onnx::TensorProto t = float_tensor(name, dims, values, /*raw=*/true);
  t.set_doc_string("tensor " + name);
  return t;
}

void add_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

onnx::ValueInfoProto value(const std::string& name, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  return v;
}

// X [1,16,2,3,3] -> ConvTranspose k=s=2 (16 -> 8 channels: a 16 KiB weight the
// loader leaves on disk) -> Add of a big constant (an attribute tensor the
// loader also leaves on disk) and a small inline one -> Y.
onnx::ModelProto fixture() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("writer-test");
  auto* op = m.add_opset_import();
  op->set_version(17);
  auto* meta = m.add_metadata_props();
  meta->set_key("k");
  meta->set_value("v");
  auto* g = m.mutable_graph();
  g->set_name("g");
  *g->add_input() = value("X", {1, 16, 2, 3, 3});
  *g->add_initializer() = random_raw_tensor("W", {16, 8, 2, 2, 2}, 1);
  *g->add_initializer() = random_raw_tensor("B", {8}, 2);
  auto* ct = g->add_node();
  ct->set_op_type("ConvTranspose");
  ct->set_name("ct");
  for (const char* i : {"X", "W", "B"}) ct->add_input(i);
  ct->add_output("T");
  add_ints(*ct, "strides", {2, 2, 2});
  auto* c = g->add_node();
  c->set_op_type("Constant");
  c->set_name("big_constant");
  c->add_output("C");
  auto* attr = c->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  *attr->mutable_t() = random_raw_tensor("", {1, 8, 4, 6, 6}, 3);  // 4.5 KiB
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("add");
  add->add_input("T");
  add->add_input("C");
  add->add_output("Y");
  *g->add_output() = value("Y", {1, 8, 4, 6, 6});
  g->set_doc_string("a field after the initializers");
  return m;
}

// Moves W's payload to `file` beside the model (the model's own external data).
void externalize_weight(onnx::ModelProto& m, const TempDir& dir, const std::string& file) {
  auto* w = m.mutable_graph()->mutable_initializer(0);
  write_file(dir.path(file), std::string(8, 'x') + w->raw_data());
  const std::string length = std::to_string(w->raw_data().size());
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", file}, {"offset", "8"}, {"length", length}}) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
}

// Every external location the model at `path` names.
std::vector<std::string> external_locations(const std::string& path) {
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file(path)));
  std::vector<std::string> out;
  for (const auto& t : m.graph().initializer()) {
    for (const auto& e : t.external_data()) {
      if (e.key() == "location") out.push_back(e.value());
    }
  }
  for (const auto& n : m.graph().node()) {
    for (const auto& a : n.attribute()) {
      for (const auto& e : a.t().external_data()) {
        if (e.key() == "location") out.push_back(e.value());
      }
    }
  }
  return out;
}

// A digest of the model's nodes and every tensor's values, from ONNX's Python
// loader (external data resolved beside the file), after its full checker.
std::string python_digest(const TempDir& logs, const std::string& path) {
  write_file(logs.path("digest.py"), R"PY(
import hashlib, sys
import onnx
from onnx import numpy_helper
onnx.checker.check_model(sys.argv[1], full_check=True)
m = onnx.load(sys.argv[1])
h = hashlib.sha256()
for t in m.graph.initializer:
    h.update(t.name.encode() + numpy_helper.to_array(t).tobytes())
for n in m.graph.node:
    node = onnx.NodeProto()
    node.CopyFrom(n)
    for a in node.attribute:
        if a.HasField("t"):
            h.update(numpy_helper.to_array(a.t).tobytes())
            a.ClearField("t")
    h.update(node.SerializeToString())
print(h.hexdigest())
)PY");
  const std::string cmd = "/usr/bin/python3 " + logs.path("digest.py") + " '" + path + "' > " + logs.path("digest") + " 2>&1";
  const int status = std::system(cmd.c_str());
  INFO(read_file(logs.path("digest")));
  REQUIRE(status == 0);
  return read_file(logs.path("digest"));
}

}  // namespace

TEST_CASE("writer: an embedded model is streamed byte for byte as serializing it would give") {
  TempDir dir;
  onnx::ModelProto m = fixture();
  const std::string expected = m.SerializeAsString();  // everything inline, canonical field order
  externalize_weight(m, dir, "weights.bin");
  const std::string path = save_model(dir, "m.onnx", m);

  LoadedModel loaded;
  std::string error;
  REQUIRE(load_model(path, loaded, error));
  CHECK(loaded.stripped_tensors >= 1);  // the Constant's payload stayed on disk
  onnx::ModelProto copy = *loaded.model;
  WriteResult result;
  REQUIRE(write_model_atomic(loaded, copy, dir.path("out.onnx"), {}, result, error));
  CHECK_FALSE(result.external_data);
  CHECK(read_file(dir.path("out.onnx")) == expected);
  CHECK(external_locations(dir.path("out.onnx")).empty());

  // --external-data: the payloads go to the output's own .data file, none stays behind.
  onnx::ModelProto again = *loaded.model;
  WriteOptions options;
  options.external_data = true;
  REQUIRE(write_model_atomic(loaded, again, dir.path("ext.onnx"), options, result, error));
  CHECK(result.external_data);
  CHECK(result.data_path == dir.path("ext.onnx.data"));
  for (const auto& location : external_locations(dir.path("ext.onnx"))) CHECK(location == "ext.onnx.data");
}

TEST_CASE("--fix on a model with external data: the fixed model is self-contained and can move") {
  TempDir src, dst, logs;
  onnx::ModelProto m = fixture();
  externalize_weight(m, src, "weights.bin");
  const std::string model = save_model(src, "m.onnx", m);

  // Embedded, beside the source (where the old writer kept pointing into weights.bin).
  const CommandResult embedded = run_bpu_lint({model, "--fix", "--fixed-model", src.path("fixed.onnx")});
  INFO(embedded.out << embedded.err);
  CHECK(embedded.exit_code == 0);
  CHECK(embedded.out.find("fixed 1 of 1 node; wrote " + src.path("fixed.onnx") + " (weights embedded)") !=
        std::string::npos);
  CHECK(external_locations(src.path("fixed.onnx")).empty());

  // Its own .data file; then the pair moves to another folder and the source goes away.
  const CommandResult external =
      run_bpu_lint({model, "--fix", "--external-data", "--fixed-model", src.path("out.onnx")});
  INFO(external.out << external.err);
  CHECK(external.exit_code == 0);
  CHECK(external.out.find("(weights in " + src.path("out.onnx") + ".data)") != std::string::npos);
  const std::vector<std::string> locations = external_locations(src.path("out.onnx"));
  CHECK(locations.size() >= 2);  // the rewritten weight and the big constant
  for (const auto& location : locations) CHECK(location == "out.onnx.data");
  const std::string before = python_digest(logs, src.path("out.onnx"));
  CHECK(python_digest(logs, src.path("fixed.onnx")) == before);  // embedded or not, the same model
  fs::rename(src.path("out.onnx"), dst.path("moved.onnx"));
  fs::rename(src.path("out.onnx.data"), dst.path("out.onnx.data"));
  fs::remove_all(src.dir());
  CHECK(python_digest(logs, dst.path("moved.onnx")) == before);
  const CommandResult relint = run_bpu_lint({dst.path("moved.onnx")});
  INFO(relint.out << relint.err);
  CHECK(relint.exit_code == 0);
  CHECK(relint.out.find("0 on CPU") != std::string::npos);
}
