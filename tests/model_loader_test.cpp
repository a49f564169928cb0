// Tests for the lean model loader. Fixtures are built with the protobuf API
// (and, where the wire layout itself matters, by hand) and written to a
// fresh temporary folder per test.
#include "bpulint/model/model_loader.h"

#include <doctest/doctest.h>
#include <google/protobuf/util/message_differencer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace fs = std::filesystem;
using bpulint::LoadedModel;
using google::protobuf::util::MessageDifferencer;

namespace {

// A unique temporary folder, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("bpulint_loader_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++) + "_" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Deterministic pseudo-random payload; distinct seeds give distinct bytes.
std::string payload(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

onnx::TensorProto raw_tensor(const std::string& name, const std::string& raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::UINT8);
  t.add_dims(static_cast<int64_t>(raw.size()));
  t.set_raw_data(raw);
  return t;
}

onnx::NodeProto node(const std::string& name, const std::string& op,
                     const std::vector<std::string>& in,
                     const std::vector<std::string>& outs) {
  onnx::NodeProto n;
  n.set_name(name);
  n.set_op_type(op);
  for (const auto& i : in) n.add_input(i);
  for (const auto& o : outs) n.add_output(o);
  return n;
}

void add_io(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
}

onnx::ModelProto base_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("bpulint-test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  add_io(g->add_input(), "x");
  add_io(g->add_output(), "y");
  return m;
}

onnx::ModelProto small_model() {
  onnx::ModelProto m = base_model();
  auto* g = m.mutable_graph();
  *g->add_node() = node("add", "Add", {"x", "w"}, {"y"});
  *g->add_initializer() = bpulint::test::float_tensor("w", {4}, {1.f, 2.f, 3.f, 4.f});
  *g->add_initializer() = raw_tensor("shape", payload(64, 1));
  return m;
}

std::string save(const TempDir& dir, const std::string& name,
                 const onnx::ModelProto& m) {
  const std::string path = dir.file(name);
  write_file(path, m.SerializeAsString());
  return path;
}

std::string external_value(const onnx::TensorProto& t, const std::string& key) {
  for (const auto& e : t.external_data())
    if (e.key() == key) return e.value();
  return "<absent>";
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::string delimited(uint32_t field, const std::string& body) {
  std::string out;
  put_varint(out, (uint64_t{field} << 3) | 2);
  put_varint(out, body.size());
  return out + body;
}

// Loads with every read asked for first (strict: a stray read crashes) and as
// the CLI does; both must give the same result. Returns the model.
struct BothLoads {
  bool ok = false;
  LoadedModel model;
  std::string error;
};
BothLoads load_both(const std::string& path) {
  BothLoads strict, plain;
  strict.ok = bpulint::load_model(path, strict.model, strict.error, bpulint::LoadOptions{/*strict_reads=*/true});
  plain.ok = bpulint::load_model(path, plain.model, plain.error);
  CHECK(strict.ok == plain.ok);
  CHECK(strict.error == plain.error);
  if (strict.ok && plain.ok) {
    CHECK(strict.model.model->SerializeAsString() == plain.model.model->SerializeAsString());
    CHECK(strict.model.read_bytes == plain.model.read_bytes);
  }
  return plain;
}

LoadedModel load_ok(const std::string& path) {
  BothLoads loaded = load_both(path);
  INFO("error: " << loaded.error);
  REQUIRE(loaded.ok);
  return std::move(loaded.model);
}

std::string load_error(const std::string& path) {
  const BothLoads loaded = load_both(path);
  CHECK_FALSE(loaded.ok);
  CHECK_FALSE(loaded.error.empty());
  return loaded.error;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

TEST_SUITE("model_loader") {

TEST_CASE("small model round-trips identical to protobuf's own parse") {
  TempDir dir;
  const onnx::ModelProto original = small_model();
  const std::string path = save(dir, "small.onnx", original);
  const LoadedModel m = load_ok(path);

  onnx::ModelProto reference;
  REQUIRE(reference.ParseFromString(read_file(path)));
  CHECK(MessageDifferencer::Equals(*m.model, reference));
  CHECK(m.model->SerializeAsString() == reference.SerializeAsString());
  CHECK(m.path == path);
  CHECK(m.file_size == fs::file_size(path));
  CHECK(m.stripped_tensors == 0);
  CHECK(m.stripped_bytes == 0);
  REQUIRE(m.node_spans.size() == 1);
}

TEST_CASE("a big graph parsed on two threads equals protobuf's own parse") {
  // Above a few thousand entries the main graph's nodes and initializers are
  // parsed apart; the message must be the one ParseFromString builds, also
  // when the wire interleaves nodes, initializers and other graph fields,
  // carries an unknown field, or repeats the `graph` field (merged by protobuf).
  TempDir dir;
  onnx::ModelProto first = base_model();
  auto* g = first.mutable_graph();
  std::string prev = "x";
  for (int i = 0; i < 3000; ++i) {
    const std::string out = "/blocks/block." + std::to_string(i) + "/Add_output_0";
    *g->add_node() = node("/blocks/block." + std::to_string(i) + "/Add", "Add", {prev, "w" + std::to_string(i)}, {out});
    *g->add_initializer() = raw_tensor("w" + std::to_string(i), payload(static_cast<size_t>(16 + i % 64), static_cast<unsigned>(i)));
    prev = out;
  }
  onnx::GraphProto more;  // serialised after the first graph's fields: interleaved on the wire
  for (int i = 0; i < 1500; ++i) {
    *more.add_node() = node("tail" + std::to_string(i), "Relu", {prev}, {"t" + std::to_string(i)});
    prev = "t" + std::to_string(i);
    *more.add_value_info() = g->input(0);
  }
  *more.add_initializer() = raw_tensor("late", payload(100, 9));
  const std::string unknown_field = delimited(99, "kept as an unknown field");
  const std::string graph_bytes = g->SerializeAsString() + more.SerializeAsString() + unknown_field;
  onnx::ModelProto rest = first;
  rest.clear_graph();
  const std::string one_graph = rest.SerializeAsString() + delimited(7, graph_bytes);
  // Two `graph` fields: protobuf merges them.
  const std::string two_graphs = rest.SerializeAsString() + delimited(7, g->SerializeAsString()) +
                                 delimited(7, more.SerializeAsString());
  for (const auto* bytes : {&one_graph, &two_graphs}) {
    const std::string path = dir.file("big.onnx");
    write_file(path, *bytes);
    const LoadedModel m = load_ok(path);
    onnx::ModelProto reference;
    REQUIRE(reference.ParseFromString(*bytes));
    CHECK(reference.graph().node_size() == 4500);
    CHECK(m.model->SerializeAsString() == reference.SerializeAsString());
    CHECK(MessageDifferencer::Equals(*m.model, reference));
  }
  // A broken node in the second half fails the load as a whole parse would.
  onnx::ModelProto broken = first;
  broken.mutable_graph()->mutable_node(2900)->set_op_type(std::string("\xff\xfe", 2));  // invalid UTF-8 in a string field
  const std::string path = dir.file("broken.onnx");
  write_file(path, broken.SerializeAsString());
  onnx::ModelProto reference;
  const bool protobuf_ok = reference.ParseFromString(broken.SerializeAsString());
  CHECK(load_both(path).ok == protobuf_ok);
}

TEST_CASE("a load reads the graph and a page or two per stripped tensor, whatever the layout") {
  TempDir dir;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  struct Layout {
    const char* name;
    int tensors;
    size_t smallest, largest;  // payload bytes, log-uniform between
    uint64_t stride;           // or each initializer exactly this long on the wire
  };
  // Scaled-down bench layouts: a few huge, hundreds of mid-size, thousands
  // mixed; and, after a graph big enough for the widest read window (1 MiB),
  // tensors back to back each exactly as long as it (512 x 512 floats).
  const Layout layouts[] = {{"few huge", 3, 4 << 20, 4 << 20, 0},
                            {"many mid-size", 120, 64 << 10, 256 << 10, 0},
                            {"mixed sizes", 1500, 4 << 10, 64 << 10, 0},
                            {"back to back", 16, 0, 0, 1 << 20}};
  for (const Layout& layout : layouts) {
    CAPTURE(layout.name);
    onnx::ModelProto m = base_model();
    auto* g = m.mutable_graph();
    const int nodes = layout.stride != 0 ? 10000 : 2000;
    const std::string pad = layout.stride != 0 ? std::string(200, 'n') : "n";  // 4 MiB of graph
    for (int i = 0; i < nodes; ++i) {
      *g->add_node() = node(pad + std::to_string(i), "Relu", {i == 0 ? "x" : "t" + std::to_string(i - 1)},
                            {i == nodes - 1 ? "y" : "t" + std::to_string(i)});
    }
    std::mt19937 rng(7);
    const double lo = std::log(static_cast<double>(layout.smallest + 1)), hi = std::log(static_cast<double>(layout.largest + 1));
    for (int i = 0; i < layout.tensors; ++i) {
      const std::string name = "w" + std::to_string(1000 + i);
      if (layout.stride != 0) {
        // The field's tag and length take 1 + 3 bytes at this size.
        size_t size = layout.stride - 4;
        while (raw_tensor(name, std::string(size, '\x5a')).ByteSizeLong() > layout.stride - 4) --size;
        *g->add_initializer() = raw_tensor(name, std::string(size, '\x5a'));
        REQUIRE(g->initializer(i).ByteSizeLong() + 4 == layout.stride);
        continue;
      }
      const auto size = static_cast<size_t>(std::exp(std::uniform_real_distribution<double>(lo, hi)(rng)));
      *g->add_initializer() = raw_tensor(name, std::string(size + 1, '\x5a'));
    }
    const std::string path = save(dir, "layout.onnx", m);
    const LoadedModel loaded = load_ok(path);  // strict too: every read was asked for, so counted
    REQUIRE(loaded.stripped_tensors == static_cast<size_t>(layout.tensors));
    const uint64_t file_size = fs::file_size(path);
    const uint64_t skeleton = file_size - loaded.stripped_bytes;
    INFO("file " << file_size << ", skeleton " << skeleton << ", read " << loaded.read_bytes);
    CHECK(loaded.read_bytes <= skeleton + 3 * page * static_cast<uint64_t>(layout.tensors) + (1 << 20));
    CHECK(loaded.read_bytes >= skeleton);
  }
}

TEST_CASE("real torch.onnx exports load the same strict and plain, and read back every weight they left on disk") {
  size_t with_stripped = 0;
  for (const auto& e : fs::recursive_directory_iterator(std::string(BPULINT_SOURCE_DIR) + "/tests/exports")) {
    if (e.path().extension() != ".onnx") continue;
    const std::string path = e.path().string();
    CAPTURE(path);
    const LoadedModel m = load_ok(path);  // strict too: every read was asked for
    const uint64_t size = fs::file_size(path);
    CHECK(m.read_bytes >= size - m.stripped_bytes);
    CHECK(m.read_bytes <= size);
    onnx::ModelProto reference;
    REQUIRE(reference.ParseFromString(read_file(path)));
    REQUIRE(reference.graph().initializer_size() == m.model->graph().initializer_size());
    for (int i = 0; i < reference.graph().initializer_size(); ++i) {
      const onnx::TensorProto& t = m.model->graph().initializer(i);
      if (!bpulint::is_self_reference(m, t)) continue;
      std::string bytes, error;
      REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
      CHECK(bytes == reference.graph().initializer(i).raw_data());
    }
    with_stripped += m.stripped_tensors > 0 ? 1 : 0;
  }
  CHECK(with_stripped >= 4);  // the ViT exports hold weights over the inline limit
}

TEST_CASE("1 MiB initializer is stripped and read back exactly") {
  TempDir dir;
  onnx::ModelProto original = small_model();
  const std::string big = payload(1 << 20, 7);
  *original.mutable_graph()->add_initializer() = raw_tensor("big", big);
  const std::string path = save(dir, "big.onnx", original);
  const LoadedModel m = load_ok(path);

  CHECK(m.stripped_tensors == 1);
  CHECK(m.stripped_bytes == big.size());
  const auto& inits = m.model->graph().initializer();
  REQUIRE(inits.size() == 3);

  const onnx::TensorProto& t = inits[2];
  CHECK(t.name() == "big");
  CHECK(t.dims_size() == 1);
  CHECK(t.dims(0) == static_cast<int64_t>(big.size()));
  CHECK(t.data_type() == onnx::TensorProto::UINT8);
  CHECK_FALSE(t.has_raw_data());
  CHECK(t.data_location() == onnx::TensorProto::EXTERNAL);
  CHECK(external_value(t, "location") == "big.onnx");
  const std::string file = read_file(path);
  CHECK(external_value(t, "offset") == std::to_string(file.find(big)));
  CHECK(external_value(t, "length") == std::to_string(big.size()));
  CHECK(bpulint::is_self_reference(m, t));

  std::string bytes, error;
  REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
  CHECK(bytes == big);

  SUBCASE("small initializers stay inline") {
    CHECK(inits[1].raw_data() == original.graph().initializer(1).raw_data());
    CHECK_FALSE(bpulint::is_self_reference(m, inits[1]));
    CHECK(MessageDifferencer::Equals(inits[0], original.graph().initializer(0)));
    REQUIRE(bpulint::read_tensor_bytes(m, inits[1], bytes, error));
    CHECK(bytes == inits[1].raw_data());
  }
}

TEST_CASE("payload exactly at the inline limit stays inline, one byte more is stripped") {
  TempDir dir;
  onnx::ModelProto original = base_model();
  *original.mutable_graph()->add_initializer() =
      raw_tensor("at", payload(bpulint::kInlinePayloadLimit, 1));
  *original.mutable_graph()->add_initializer() =
      raw_tensor("over", payload(bpulint::kInlinePayloadLimit + 1, 2));
  const LoadedModel m = load_ok(save(dir, "limit.onnx", original));
  CHECK(m.model->graph().initializer(0).has_raw_data());
  CHECK_FALSE(m.model->graph().initializer(1).has_raw_data());
  CHECK(m.stripped_tensors == 1);
}

TEST_CASE("raw_data before dims on the wire: other fields kept, offset correct") {
  TempDir dir;
  const std::string big = payload(10000, 3);
  onnx::TensorProto raw_only, meta_only;
  raw_only.set_raw_data(big);
  meta_only.set_name("early");
  meta_only.add_dims(100);
  meta_only.add_dims(100);
  meta_only.set_data_type(onnx::TensorProto::UINT8);
  // Concatenated messages merge, so this is one tensor with raw_data first.
  const std::string tensor = raw_only.SerializeAsString() + meta_only.SerializeAsString();

  onnx::ModelProto header = base_model();
  const std::string graph = header.graph().SerializeAsString() + delimited(5, tensor);
  header.clear_graph();
  const std::string path = dir.file("early.onnx");
  write_file(path, header.SerializeAsString() + delimited(7, graph));

  const LoadedModel m = load_ok(path);
  REQUIRE(m.model->graph().initializer_size() == 1);
  const auto& t = m.model->graph().initializer(0);
  CHECK(t.name() == "early");
  CHECK(t.dims_size() == 2);
  CHECK(t.data_type() == onnx::TensorProto::UINT8);
  CHECK(bpulint::is_self_reference(m, t));
  std::string bytes, error;
  REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
  CHECK(bytes == big);
}

TEST_CASE("tensor that is already external is left alone") {
  TempDir dir;
  onnx::ModelProto original = base_model();
  onnx::TensorProto t = raw_tensor("odd", payload(8000, 4));
  t.set_data_location(onnx::TensorProto::DEFAULT);
  *original.mutable_graph()->add_initializer() = t;
  const LoadedModel m = load_ok(save(dir, "odd.onnx", original));
  CHECK(m.stripped_tensors == 0);
  CHECK(m.model->graph().initializer(0).raw_data() == t.raw_data());
}

TEST_CASE("Constant node's big attribute tensor is stripped") {
  TempDir dir;
  onnx::ModelProto original = base_model();
  const std::string big = payload(50000, 5);
  onnx::NodeProto c = node("const", "Constant", {}, {"c"});
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = raw_tensor("cval", big);
  *original.mutable_graph()->add_node() = c;
  const LoadedModel m = load_ok(save(dir, "const.onnx", original));

  const auto& t = m.model->graph().node(0).attribute(0).t();
  CHECK(t.name() == "cval");
  CHECK(bpulint::is_self_reference(m, t));
  CHECK(m.stripped_tensors == 1);
  std::string bytes, error;
  REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
  CHECK(bytes == big);
}

TEST_CASE("sparse initializer and attribute tensor lists are stripped") {
  TempDir dir;
  onnx::ModelProto original = base_model();
  const std::string values = payload(6000, 8), indices = payload(8000, 9);
  auto* sp = original.mutable_graph()->add_sparse_initializer();
  *sp->mutable_values() = raw_tensor("sv", values);
  *sp->mutable_indices() = raw_tensor("si", indices);
  sp->add_dims(6000);
  onnx::NodeProto n = node("n", "Custom", {}, {"o"});
  auto* a = n.add_attribute();
  a->set_name("ts");
  a->set_type(onnx::AttributeProto::TENSORS);
  *a->add_tensors() = raw_tensor("t0", payload(5000, 10));
  *a->add_tensors() = raw_tensor("t1", payload(10, 11));
  *original.mutable_graph()->add_node() = n;

  const LoadedModel m = load_ok(save(dir, "sparse.onnx", original));
  CHECK(m.stripped_tensors == 3);
  std::string bytes, error;
  REQUIRE(bpulint::read_tensor_bytes(m, m.model->graph().sparse_initializer(0).indices(), bytes, error));
  CHECK(bytes == indices);
  CHECK(m.model->graph().sparse_initializer(0).dims(0) == 6000);
  CHECK(m.model->graph().node(0).attribute(0).tensors(1).has_raw_data());
}

TEST_CASE("If subgraphs: big initializers stripped, node spans in pre-order") {
  TempDir dir;
  onnx::ModelProto original = base_model();
  auto* g = original.mutable_graph();
  const std::string then_big = payload(20000, 12), else_big = payload(30000, 13);

  onnx::GraphProto then_g;
  then_g.set_name("then");
  *then_g.add_node() = node("t1", "Identity", {"x"}, {"a"});
  *then_g.add_node() = node("t2", "Add", {"a", "tw"}, {"r"});
  *then_g.add_initializer() = raw_tensor("tw", then_big);
  onnx::GraphProto else_g;
  else_g.set_name("else");
  *else_g.add_node() = node("e1", "Add", {"x", "ew"}, {"r"});
  *else_g.add_initializer() = raw_tensor("ew", else_big);

  *g->add_node() = node("a", "Identity", {"x"}, {"cond"});
  onnx::NodeProto if_node = node("if", "If", {"cond"}, {"y"});
  auto* then_attr = if_node.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  *then_attr->mutable_g() = then_g;
  auto* else_attr = if_node.add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  *else_attr->mutable_g() = else_g;
  *g->add_node() = if_node;
  *g->add_node() = node("b", "Identity", {"y"}, {"z"});

  auto* fn = original.add_functions();
  fn->set_name("F");
  fn->set_domain("custom");
  *fn->add_node() = node("f1", "Relu", {"i"}, {"o"});

  const std::string path = save(dir, "if.onnx", original);
  const LoadedModel m = load_ok(path);
  CHECK(m.stripped_tensors == 2);
  CHECK(m.stripped_bytes == then_big.size() + else_big.size());

  const auto& lean_if = m.model->graph().node(1);
  const auto& lean_then = lean_if.attribute(0).g().initializer(0);
  const auto& lean_else = lean_if.attribute(1).g().initializer(0);
  CHECK(bpulint::is_self_reference(m, lean_then));
  CHECK(bpulint::is_self_reference(m, lean_else));
  std::string bytes, error;
  REQUIRE(bpulint::read_tensor_bytes(m, lean_then, bytes, error));
  CHECK(bytes == then_big);
  REQUIRE(bpulint::read_tensor_bytes(m, lean_else, bytes, error));
  CHECK(bytes == else_big);

  // Spans: the If node's branch nodes come right after it, function nodes last.
  const std::vector<std::string> expected = {"a", "if", "t1", "t2", "e1", "b", "f1"};
  REQUIRE(m.node_spans.size() == expected.size());
  const std::string file = read_file(path);
  uint64_t previous_start = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& span = m.node_spans[i];
    REQUIRE(span.offset + span.length <= file.size());
    CHECK(span.offset >= previous_start);
    previous_start = span.offset;
    onnx::NodeProto parsed;
    REQUIRE(parsed.ParseFromString(file.substr(span.offset, span.length)));
    CHECK(parsed.name() == expected[i]);
  }
  // Spans of nodes without big tensors parse to exactly the lean node.
  onnx::NodeProto parsed;
  REQUIRE(parsed.ParseFromString(file.substr(m.node_spans[0].offset, m.node_spans[0].length)));
  CHECK(MessageDifferencer::Equals(parsed, m.model->graph().node(0)));
  REQUIRE(parsed.ParseFromString(file.substr(m.node_spans[1].offset, m.node_spans[1].length)));
  CHECK(MessageDifferencer::Equals(parsed, if_node));
  REQUIRE(parsed.ParseFromString(file.substr(m.node_spans[6].offset, m.node_spans[6].length)));
  CHECK(MessageDifferencer::Equals(parsed, m.model->functions(0).node(0)));
}

TEST_CASE("typed fields are converted to raw little-endian bytes") {
  const LoadedModel m;  // typed data needs no file
  std::string bytes, error;
  onnx::TensorProto t;

  SUBCASE("float_data") {
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(1.0f);
    t.add_float_data(-2.0f);
    REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(bytes == std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
  }
  SUBCASE("int64_data") {
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_int64_data(1);
    t.add_int64_data(-1);
    REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(bytes == std::string("\x01\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 16));
  }
  SUBCASE("float16 in int32_data") {
    t.set_data_type(onnx::TensorProto::FLOAT16);
    t.add_int32_data(0x3c00);  // 1.0
    t.add_int32_data(0xc000);  // -2.0
    REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(bytes == std::string("\x00\x3c\x00\xc0", 4));
  }
  SUBCASE("bool, int8, int16 in int32_data") {
    t.set_data_type(onnx::TensorProto::BOOL);
    t.add_int32_data(1);
    t.add_int32_data(0);
    REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(bytes == std::string("\x01\x00", 2));
    t.set_data_type(onnx::TensorProto::INT8);
    t.set_int32_data(1, -1);
    REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(bytes == std::string("\x01\xff", 2));
    t.set_data_type(onnx::TensorProto::INT16);
    REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(bytes == std::string("\x01\x00\xff\xff", 4));
  }
  SUBCASE("int32, double, uint64, uint32") {
    t.set_data_type(onnx::TensorProto::INT32);
    t.add_int32_data(-2);
    REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(bytes == std::string("\xfe\xff\xff\xff", 4));
    onnx::TensorProto d;
    d.set_data_type(onnx::TensorProto::DOUBLE);
    d.add_double_data(1.0);
    REQUIRE(bpulint::read_tensor_bytes(m, d, bytes, error));
    CHECK(bytes == std::string("\0\0\0\0\0\0\xf0\x3f", 8));
    onnx::TensorProto u;
    u.set_data_type(onnx::TensorProto::UINT64);
    u.add_uint64_data(0x0102030405060708ull);
    REQUIRE(bpulint::read_tensor_bytes(m, u, bytes, error));
    CHECK(bytes == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
    u.set_data_type(onnx::TensorProto::UINT32);
    REQUIRE(bpulint::read_tensor_bytes(m, u, bytes, error));
    CHECK(bytes == std::string("\x08\x07\x06\x05", 4));
  }
  SUBCASE("string tensors have no raw layout") {
    t.set_data_type(onnx::TensorProto::STRING);
    t.add_string_data("hi");
    CHECK_FALSE(bpulint::read_tensor_bytes(m, t, bytes, error));
    CHECK(error.find("string") != std::string::npos);
  }
}

TEST_CASE("external data files beside the model") {
  TempDir dir;
  const std::string data = payload(9000, 14);
  write_file(dir.file("weights.bin"), std::string(16, 'x') + data);
  fs::create_directories(dir.path() / "sub");
  write_file(dir.file("sub/w.bin"), data);

  auto external = [](const std::string& location, const std::string& offset,
                     const std::string& length) {
    onnx::TensorProto t;
    t.set_name("ext");
    t.set_data_type(onnx::TensorProto::UINT8);
    t.add_dims(9000);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&t](const std::string& k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    if (!offset.empty()) add("offset", offset);
    if (!length.empty()) add("length", length);
    return t;
  };

  onnx::ModelProto original = base_model();
  *original.mutable_graph()->add_initializer() =
      external("weights.bin", "16", std::to_string(data.size()));
  const LoadedModel m = load_ok(save(dir, "ext.onnx", original));
  CHECK(m.stripped_tensors == 0);
  const auto& t = m.model->graph().initializer(0);
  CHECK_FALSE(bpulint::is_self_reference(m, t));

  std::string bytes, error;
  REQUIRE(bpulint::read_tensor_bytes(m, t, bytes, error));
  CHECK(bytes == data);

  SUBCASE("missing length means to end of file") {
    REQUIRE(bpulint::read_tensor_bytes(m, external("weights.bin", "16", ""), bytes, error));
    CHECK(bytes == data);
    REQUIRE(bpulint::read_tensor_bytes(m, external("sub/w.bin", "", ""), bytes, error));
    CHECK(bytes == data);
    REQUIRE(bpulint::read_tensor_bytes(m, external("sub/../weights.bin", "16", ""), bytes, error));
    CHECK(bytes == data);
  }
  SUBCASE("offset + length beyond the file is an error") {
    CHECK_FALSE(bpulint::read_tensor_bytes(m, external("weights.bin", "16", "9001"), bytes, error));
    CHECK(error.find("beyond end of file") != std::string::npos);
    CHECK_FALSE(bpulint::read_tensor_bytes(m, external("weights.bin", "99999", ""), bytes, error));
    CHECK_FALSE(bpulint::read_tensor_bytes(
        m, external("weights.bin", "1", "18446744073709551615"), bytes, error));
    CHECK_FALSE(bpulint::read_tensor_bytes(m, external("weights.bin", "-1", ""), bytes, error));
  }
  SUBCASE("a length the dims do not need is refused before a byte is read") {
    onnx::TensorProto t4 = external("weights.bin", "16", "9000");
    t4.set_dims(0, 4);
    CHECK_FALSE(bpulint::read_tensor_bytes(m, t4, bytes, error));
    CHECK(error == "external data 'weights.bin': 9000 bytes, but its dims need 4");
    t4 = external("sub/w.bin", "", "");
    t4.set_dims(0, 3);
    CHECK_FALSE(bpulint::read_tensor_bytes(m, t4, bytes, error));
    CHECK(error == "external data 'sub/w.bin': 9000 bytes (to the end of the file), but its dims need 3");
  }
  SUBCASE("missing external file") {
    CHECK_FALSE(bpulint::read_tensor_bytes(m, external("nope.bin", "", ""), bytes, error));
    CHECK(error.find("no such file") != std::string::npos);
    CHECK_FALSE(bpulint::read_tensor_bytes(m, external("sub", "", ""), bytes, error));
  }
  SUBCASE("absolute and escaping locations are refused") {
    for (const char* bad : {"/etc/passwd", "../weights.bin", "sub/../../weights.bin",
                            "..", "./../x"}) {
      INFO(bad);
      CHECK_FALSE(bpulint::read_tensor_bytes(m, external(bad, "", ""), bytes, error));
      CHECK((error.find("refused") != std::string::npos ||
             error.find("escapes") != std::string::npos));
    }
  }
}

TEST_CASE("file-level errors") {
  TempDir dir;
  CHECK(load_error(dir.file("missing.onnx")) == "no such file");
  CHECK(load_error(dir.path().string()) == "is a directory");
  write_file(dir.file("empty.onnx"), "");
  CHECK(load_error(dir.file("empty.onnx")) == "empty file");
  // A FIFO must be refused, not block waiting for a writer.
  REQUIRE(::mkfifo(dir.file("fifo.onnx").c_str(), 0600) == 0);
  CHECK(load_error(dir.file("fifo.onnx")) == "not a regular file");
}

TEST_CASE("failure leaves the output untouched") {
  TempDir dir;
  LoadedModel m;
  m.path = "keep";
  std::string error;
  CHECK_FALSE(bpulint::load_model(dir.file("missing.onnx"), m, error));
  CHECK(m.path == "keep");
}

TEST_CASE("every prefix of a small model fails cleanly or parses") {
  TempDir dir;
  onnx::ModelProto original = small_model();
  *original.mutable_graph()->add_initializer() = raw_tensor("big", payload(5000, 15));
  const std::string bytes = original.SerializeAsString();
  const std::string path = dir.file("prefix.onnx");
  size_t failures = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_file(path, bytes.substr(0, n));
    const BothLoads loaded = load_both(path);
    if (!loaded.ok) {
      ++failures;
      CHECK_FALSE(loaded.error.empty());
      CHECK(loaded.error.find('\n') == std::string::npos);
    }
  }
  CHECK(failures > bytes.size() / 2);
}

TEST_CASE("truncation reports where and by how much") {
  TempDir dir;
  const std::string path = dir.file("trunc.onnx");
  // field 7 (graph) declares 4096 bytes but only 300 follow.
  std::string bytes = "\x3a";
  put_varint(bytes, 4096);
  bytes += std::string(300, '\0');
  write_file(path, bytes);
  CHECK(load_error(path) ==
        "not an ONNX model: truncated at byte 3 (field 7 declares 4096 bytes, 300 left)");

  onnx::ModelProto original = base_model();
  *original.mutable_graph()->add_initializer() = raw_tensor("big", payload(1 << 20, 16));
  const std::string full = original.SerializeAsString();
  write_file(path, full.substr(0, full.size() / 2));
  CHECK(starts_with(load_error(path), "not an ONNX model: truncated at byte"));
}

TEST_CASE("malformed wire format is rejected precisely") {
  TempDir dir;
  const std::string path = dir.file("bad.onnx");
  write_file(path, std::string("\x3b", 1));  // field 7, wire type 3 (group)
  CHECK(load_error(path) == "not an ONNX model: unsupported wire type 3 in field 7 at byte 0");
  write_file(path, std::string("\x3e\x00", 2));  // wire type 6
  CHECK(starts_with(load_error(path), "not an ONNX model: unsupported wire type 6"));
  write_file(path, std::string("\x02\x00", 2));  // field number 0
  CHECK(load_error(path) == "not an ONNX model: field number 0 at byte 0");
  write_file(path, std::string("\x08") + std::string(11, '\xff'));
  CHECK(load_error(path) == "not an ONNX model: varint longer than 10 bytes at byte 1");
  write_file(path, std::string("\x08\xff", 2));
  CHECK(load_error(path) == "not an ONNX model: truncated varint at byte 1");
  write_file(path, std::string("\x09\x01\x02", 3));  // fixed64 with 2 bytes
  CHECK(starts_with(load_error(path), "not an ONNX model: truncated at byte 1"));
}

TEST_CASE("models without graph or ir_version are rejected") {
  TempDir dir;
  onnx::ModelProto no_graph;
  no_graph.set_ir_version(8);
  CHECK(load_error(save(dir, "a.onnx", no_graph)) == "not an ONNX model: no graph");
  onnx::ModelProto no_ir = base_model();
  no_ir.clear_ir_version();
  CHECK(load_error(save(dir, "b.onnx", no_ir)) == "not an ONNX model: missing ir_version");
}

TEST_CASE("random bytes and text files are not models") {
  TempDir dir;
  const std::string path = dir.file("junk.onnx");
  for (unsigned seed = 0; seed < 200; ++seed) {
    write_file(path, payload(1 + seed * 37 % 3000, seed));
    const BothLoads loaded = load_both(path);
    if (!loaded.ok) CHECK_FALSE(loaded.error.empty());
  }
  write_file(path, "ir_version: 8\ngraph {\n  name: \"text format\"\n}\n");
  CHECK(starts_with(load_error(path), "not an ONNX model: "));
  write_file(path, "#!/bin/sh\necho hello world\n");
  CHECK(starts_with(load_error(path), "not an ONNX model: "));
}

TEST_CASE("nesting bombs are rejected without crashing") {
  TempDir dir;
  SUBCASE("If inside If, 40 levels (120 message levels)") {
    onnx::GraphProto inner;
    inner.set_name("leaf");
    for (int i = 0; i < 40; ++i) {
      onnx::GraphProto outer;
      onnx::NodeProto* n = outer.add_node();
      n->set_op_type("If");
      auto* a = n->add_attribute();
      a->set_name("then_branch");
      *a->mutable_g() = inner;
      inner = outer;
    }
    onnx::ModelProto m = base_model();
    *m.mutable_graph() = inner;
    CHECK(load_error(save(dir, "bomb.onnx", m)) == "subgraphs nested deeper than 20 levels (64 protobuf message levels)");
  }
  SUBCASE("deep TypeProto in a verbatim-copied field") {
    // TypeProto.sequence_type(4) -> Sequence.elem_type(1) -> TypeProto ...
    std::string type;
    for (int i = 0; i < 5000; ++i) type = delimited(4, delimited(1, type));
    const std::string value_info = delimited(1, "x") + delimited(2, type);
    onnx::ModelProto header = base_model();
    header.clear_graph();
    write_file(dir.file("typebomb.onnx"),
               header.SerializeAsString() + delimited(7, delimited(11, value_info)));
    CHECK(starts_with(load_error(dir.file("typebomb.onnx")), "not an ONNX model: "));
  }
}

}  // TEST_SUITE
