#include <doctest/doctest.h>

#include "bpulint/rules/fact_names.h"
#include "bpulint/engine/facts.h"
#include "bpulint/engine/placement.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

// Facts point into the loaded model, so both live together.
struct Linted {
  std::unique_ptr<LoadedModel> loaded = std::make_unique<LoadedModel>();
  ModelFacts facts;
  const ModelFacts* operator->() const { return &facts; }
};

Linted facts_of(const std::string& text, const FactOptions& options = {}) {
  TempDir dir;
  Linted l;
  std::string error;
  REQUIRE(load_model(save_model(dir, "m.onnx", model_from_text(text)), *l.loaded, error));
  REQUIRE(extract_facts(*l.loaded, options, l.facts, error));
  return l;
}

Value fact(const NodeFacts& n, const std::string& name) {
  const Value record = node_record(n, "bpu");
  const Value* v = record.field(name);
  REQUIRE(v != nullptr);
  return *v;
}

const char* kConvTranspose3d = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,128,2,6,6] X, float[128,64,5,2,2] W) => (float[N,64,10,12,12] Y) {
  Y = ConvTranspose <strides = [5,2,2]> (X, W)
}
)";

}  // namespace

TEST_CASE("ConvTranspose defaults are resolved for its opset") {
  const Linted f = facts_of(kConvTranspose3d);
  REQUIRE(f->nodes.size() == 1);
  const NodeFacts& n = f->nodes[0];
  CHECK(n.op_type == "ConvTranspose");
  CHECK(n.opset == 17);
  CHECK(n.graph_path == "g");
  CHECK(n.display_name == "ConvTranspose_0");
  CHECK(fact(n, "kernel_shape").to_string() == "[5, 2, 2]");  // from the weight
  CHECK(fact(n, "strides").to_string() == "[5, 2, 2]");
  CHECK(fact(n, "dilations").to_string() == "[1, 1, 1]");
  CHECK(fact(n, "pads").to_string() == "[0, 0, 0, 0, 0, 0]");
  CHECK(fact(n, "output_padding").to_string() == "[0, 0, 0]");
  CHECK(fact(n, "group").to_string() == "1");
  CHECK(fact(n, "auto_pad").to_string() == "NOTSET");
}

TEST_CASE("tensor facts: dtype, shape with unknown dynamic dims, constness") {
  const Linted f = facts_of(kConvTranspose3d);
  const Value in = *fact(f->nodes[0], "input").items().at(0).field("shape");
  CHECK(in.to_string() == "[?, 128, 2, 6, 6]");
  CHECK(in.items()[0].is_unknown());
  CHECK(in.items()[0].as_string() == "dynamic dim 'N'");
  const Value x = fact(f->nodes[0], "input").items().at(0);
  CHECK(x.field("dtype")->as_string() == "float32");
  CHECK(x.field("rank")->as_int() == 5);
  CHECK_FALSE(x.field("const")->as_bool());
  const Value y = fact(f->nodes[0], "output").items().at(0);
  CHECK(y.field("shape")->to_string() == "[?, 64, 10, 12, 12]");
  CHECK(fact(f->nodes[0], "max_rank").as_int() == 5);
}

TEST_CASE("--input-shape pins dynamic dims and shape inference follows") {
  FactOptions o;
  o.input_shapes["X"] = {2, 128, 2, 6, 6};
  const Linted f = facts_of(kConvTranspose3d, o);
  CHECK(fact(f->nodes[0], "output").items().at(0).field("shape")->to_string() == "[2, 64, 10, 12, 12]");
}

TEST_CASE("--input-shape errors name the problem") {
  TempDir dir;
  LoadedModel loaded;
  std::string error;
  REQUIRE(load_model(save_model(dir, "m.onnx", model_from_text(kConvTranspose3d)), loaded, error));
  ModelFacts facts;
  FactOptions o;
  o.input_shapes["nope"] = {1};  // another model's input: ignored, and not among the pins that applied
  CHECK(extract_facts(loaded, o, facts, error));
  CHECK(facts.pinned_inputs.empty());
  o.input_shapes.clear();
  o.input_shapes["X"] = {1, 2};
  CHECK_FALSE(extract_facts(loaded, o, facts, error));
  CHECK(error.find("rank 2") != std::string::npos);
  o.input_shapes["X"] = {1, 64, 2, 6, 6};
  CHECK_FALSE(extract_facts(loaded, o, facts, error));
  CHECK(error.find("dim 1") != std::string::npos);
}

TEST_CASE("initializers and Constant outputs are constant") {
  const Linted f = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] X) => (float[1,4] Y) {
  C = Constant <value = float[4] {1.0, 2.0, 3.0, 4.0}> ()
  Y = Add (X, C)
}
)");
  REQUIRE(f->nodes.size() == 2);
  const Value c = fact(f->nodes[1], "input").items().at(1);
  CHECK(c.field("const")->as_bool());
  CHECK(c.field("shape")->to_string() == "[4]");
}

TEST_CASE("subgraphs are walked with graph paths") {
  const Linted f = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (bool cond, float[2] X) => (float[2] Y) {
  Y = If (cond) <
    then_branch = then_g () => (float[2] A) { A = Relu (X) },
    else_branch = else_g () => (float[2] B) { B = Neg (X) }
  >
}
)");
  REQUIRE(f->nodes.size() == 3);
  CHECK(f->nodes[0].op_type == "If");
  CHECK(f->nodes[1].graph_path == "g/If_0.then_branch");
  CHECK(f->nodes[1].op_type == "Relu");
  CHECK(f->nodes[2].graph_path == "g/If_0.else_branch");
  CHECK(f->nodes[2].path() == "g/If_0.else_branch/Neg_0");
  // Outer-scope values are visible inside the subgraph.
  CHECK(fact(f->nodes[1], "input").items().at(0).field("shape")->to_string() == "[2]");
}

// CPU islands are built from these producers (placement.cpp).
TEST_CASE("the walk records each value's producer, and CPU islands stay within their graph") {
  // Three ConvTranspose3d k = s = 2 (on the CPU on j6p): one in the main graph,
  // one in each branch of an If, both reading the main graph's result.
  const ModelReport r = lint_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (bool cond, float[1, 4, 2, 4, 4] X) => (float[1, 4, 8, 16, 16] Y) <float[4, 4, 2, 2, 2] W = {)" +
                                  [] {
                                    std::string zeros = "0";
                                    for (int i = 1; i < 128; ++i) zeros += ", 0";
                                    return zeros;
                                  }() + R"(}> {
  t = ConvTranspose <kernel_shape = [2, 2, 2], strides = [2, 2, 2]> (X, W)
  Y = If (cond) <
    then_branch = then_g () => (float[1, 4, 8, 16, 16] A) {
      A = ConvTranspose <kernel_shape = [2, 2, 2], strides = [2, 2, 2]> (t, W)
    },
    else_branch = else_g () => (float[1, 4, 8, 16, 16] B) {
      B = ConvTranspose <kernel_shape = [2, 2, 2], strides = [2, 2, 2]> (t, W)
    }
  >
}
)");
  REQUIRE(r.facts.nodes.size() == 4);  // t, If, then's, else's
  const auto& main_ct = r.facts.nodes[0];
  CHECK(main_ct.inputs[0].producer == 0);  // a graph input
  CHECK(main_ct.inputs[1].producer == 0);  // an initializer
  CHECK(main_ct.outputs[0].producer == 1);
  for (size_t branch : {2u, 3u}) {
    INFO(r.facts.nodes[branch].graph_path);
    CHECK(r.facts.nodes[branch].inputs[0].producer == 1);  // read from the enclosing graph
    REQUIRE(r.placement[branch] == Placement::Cpu);
  }
  REQUIRE(r.placement[0] == Placement::Cpu);
  // Each branch's node is its own island, apart from the main graph's.
  const std::vector<long> islands = cpu_islands(r.facts, r.placement);
  CHECK(islands[0] >= 0);
  CHECK(islands[2] != islands[0]);
  CHECK(islands[3] != islands[0]);
  CHECK(islands[2] != islands[3]);
}

TEST_CASE("a model newer than the ONNX library gets a note, not a refusal") {
  const Linted f = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] X) => (float[2] Y) { Y = Relu (X) }
)");
  CHECK(f->notes.empty());
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] X) => (float[2] Y) { Y = Relu (X) }
)");
  m.mutable_opset_import(0)->set_version(max_known_opset() + 2);
  TempDir dir;
  LoadedModel loaded;
  std::string error;
  REQUIRE(load_model(save_model(dir, "m.onnx", m), loaded, error));
  ModelFacts facts;
  REQUIRE(extract_facts(loaded, {}, facts, error));
  REQUIRE_FALSE(facts.notes.empty());
  CHECK(facts.notes[0].find("newer than the ONNX library") != std::string::npos);
  CHECK(facts.nodes.size() == 1);
}

TEST_CASE("model-level facts") {
  const Linted f = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float16[2] X, int8[2] Z) => (float16[2] Y) { Y = Relu (X) }
)");
  CHECK(f->model.field("io_dtypes")->to_string() == "['float16', 'int8']");
  CHECK(f->model.field("duplicate_io_names")->to_string() == "[]");
  CHECK(f->model.field("input")->items().size() == 2);
}

TEST_CASE("a declared output shape that contradicts inference does not lose every shape") {
  const Linted f = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,3,3] X) => (float[7] Y) {
  A = Relu (X)
  Y = Relu (A)
}
)");
  REQUIRE(f->notes.size() == 1);
  CHECK(f->notes[0] == "declared shapes contradict shape inference for 1 value (first: 'Y'); the inferred shapes are used");
  CHECK(fact(f->nodes[1], "input").items().at(0).field("shape")->to_string() == "[1, 4, 3, 3]");
}

TEST_CASE("inconsistent conv ranks do not crash ONNX shape inference") {
  // ONNX 1.12's ConvTranspose inference reads past its kernel vector here.
  for (const char* w : {"float W", "float[4,2,2,2] W", "float[4,2] W"}) {
    const Linted f = facts_of(std::string(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,3,3,3] X, )") + w + R"() => (float[] Y) {
  Y = ConvTranspose <strides = [2, 2, 2]> (X, W)
}
)");
    CHECK(f->nodes.size() == 1);
  }
  const Linted conv = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,3,3] X, float[4,4,1,1] W) => (float[] Y) {
  Y = Conv <kernel_shape = [1, 1, 1]> (X, W)
}
)");
  CHECK(conv->nodes.size() == 1);
}

TEST_CASE("model-local functions are reported as not analysed, their calls as unknown ops") {
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[2] X) => (float[2] Y) { Y = local.Twice (X) }
)");
  auto* fn = m.add_functions();
  fn->set_name("Twice");
  fn->set_domain("local");
  fn->add_input("A");
  fn->add_output("B");
  auto* node = fn->add_node();
  node->set_op_type("Add");
  node->add_input("A");
  node->add_input("A");
  node->add_output("B");
  auto* imp = fn->add_opset_import();
  imp->set_domain("");
  imp->set_version(17);
  TempDir dir;
  const ModelReport r = lint_model(save_model(dir, "f.onnx", m), platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.facts.unanalysed_functions.size() == 1);
  CHECK(r.facts.unanalysed_functions[0] == "local.Twice (1 nodes)");
  bool noted = false;
  for (const auto& d : r.diagnostics) {
    noted = noted || d.message.find("model-local function local.Twice (1 nodes) is not analysed") != std::string::npos;
  }
  CHECK(noted);
  CHECK(r.summary.unknown == 1);
}

TEST_CASE("hostile conv attributes: zero strides, spoofing attribute names") {
  const Linted zero = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] X, float[4,4,3,3] W) => (float[] Y) {
  Y = Conv <strides = [0, 0]> (X, W)
}
)");
  CHECK(zero->nodes.size() == 1);  // ONNX would divide by zero here
  const Linted spoof = facts_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] X, float[4,4,3,3] W) => (float[] Y) {
  Y = Conv <input = [1, 2, 3]> (X, W)
}
)");
  const Value rec = node_record(spoof->nodes[0], "bpu");
  CHECK(rec.field("input")->items().size() == 2);
  CHECK(rec.field("kernel_shape")->to_string() == "[3, 3]");
}

TEST_CASE("a node's facts read on demand equal its whole record, shortcuts included") {
  // NodeFactSource answers `input[k].field` and `len(input)` without building
  // the list of records; every answer must be the record's, unknown reasons too.
  std::vector<ExprPtr> exprs;
  for (const char* text : {"input[0].shape", "input[1].value", "input[1].const", "input[2].present", "output[0].rank",
                           "input[0].dtype", "output[0].name", "input[9].shape", "input[0].nosuch", "len(input)",
                           "len(output)", "input[1].shape[0] * len(input)", "output[0].value",
                           // quantifiers walk root lists element by element (lazily) when untraced
                           "all(t in input + output: t.rank <= 4)", "map(t in input: t.shape)",
                           "count(t in output: t.const)", "any(t in input: t == t)", "map(t in input + output: t.dtype)",
                           "all(t in input: t.name != 'x' and t.nosuch)", "map(t in input: [t.shape[0], len(t.shape)])"}) {
    ExprError error;
    exprs.push_back(parse_expr(text, &error));
    REQUIRE(exprs.back() != nullptr);
  }
  // Every reserved fact, so the source's own list of them cannot drift from node_record's.
  for (const auto& name : reserved_node_facts()) {
    ExprError error;
    exprs.push_back(parse_expr(name, &error));
    REQUIRE(exprs.back() != nullptr);
  }
  for (const auto* name : {"j6p", "bayes-e", "bernoulli2"}) {
    for (const auto& rule : platform(name).rules) {
      for (const auto& e : {rule.when, rule.require}) {
        if (e) exprs.push_back(e);
      }
    }
  }
  size_t compared = 0;
  for (const char* file : {"vit_mha_dynamic", "fpn_interpolate", "occupancy_dynamic", "masking_where"}) {
    const ModelReport r = lint_model(std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + file + ".onnx",
                                     platform("j6p"), {});
    REQUIRE(r.ok);
    for (const auto& n : r.facts.nodes) {
      const std::string op_class = "bpu";  // the source keeps a reference
      const NodeFactSource source(n, op_class);
      const Value record = node_record(n, op_class);
      for (const auto& e : exprs) {
        const Value fast = eval(*e, source);
        const Value slow = eval(*e, record);
        INFO(std::string(file) << " " << n.display_name << ": " << expr_text(*e));
        CHECK(fast.kind() == slow.kind());
        CHECK(fast.to_string() == slow.to_string());
        CHECK(fast.as_string() == slow.as_string());  // the unknown's reason
        CHECK(fast.identical(slow));
        ++compared;
      }
    }
  }
  CHECK(compared > 10000);
}

TEST_CASE("Einsum output dims come from its equation: explicit, implicit, ellipsis, dynamic") {
  // ONNX 1.12 infers only the rank; a lift-splat volume needs its dims.
  struct Case {
    const char* inputs;
    const char* equation;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"float[1,8,12,20] A, float[1,16,12,20] B", "bdhw,bchw->bcdhw", "[1, 16, 8, 12, 20]"},
      {"float[N,8,12,20] A, float[N,16,12,20] B", "bdhw,bchw->bcdhw", "[?, 16, 8, 12, 20]"},
      {"float[3,4] A, float[4,5] B", "ij,jk", "[3, 5]"},                  // implicit: labels used once, sorted
      {"float[2,7,3,4] A, float[4,5] B", "...ij,jk->...ik", "[2, 7, 3, 5]"},
      {"float[2,1,3,4] A, float[1,6,4,5] B", "...ij,...jk->...ik", "[2, 6, 3, 5]"},  // ellipsis broadcast
      {"float[5,5] A", "ii->i", "[5]"},
      {"float[3,4] A, float[4,5] B", "ij, jk -> ki", "[5, 3]"},
  };
  for (const auto& c : cases) {
    const std::string equation = c.equation;
    CAPTURE(equation);
    const std::string text = std::string("<ir_version: 8, opset_import: [\"\" : 13]>\ng (") + c.inputs +
                             ") => (float[1] Z) {\n  Y = Einsum <equation = \"" + c.equation +
                             "\"> (" + (std::string(c.inputs).find(" B") != std::string::npos ? "A, B" : "A") +
                             ")\n  Z = Relu (Y)\n}";
    const Linted f = facts_of(text);
    CHECK(fact(f->nodes[0], "output").items().at(0).field("shape")->to_string() == std::string(c.expected));
  }
  // Contradicting dims for one label: no dims are made up.
  const Linted bad = facts_of(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3,4] A, float[5,6] B) => (float[1] Z) {
  Y = Einsum <equation = "ij,jk->ik"> (A, B)
  Z = Relu (Y)
}
)");
  CHECK(fact(bad->nodes[0], "output").items().at(0).field("shape")->to_string().find("5") == std::string::npos);
}

TEST_CASE("the fact table names exactly the fields node, tensor and model records carry") {
  const ModelReport r = lint_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,4,8,8] X, float[4,4,3,3] W) => (float[1,4,6,6] Y) {
      Y = Conv (X, W)
    }
  )", "j6p");
  REQUIRE(r.ok);
  REQUIRE(r.facts.nodes.size() == 1);
  // A record with no attributes selected: only the root facts.
  FactSelection roots = FactSelection::all();
  roots.attributes = false;
  const Value node = node_record(r.facts.nodes[0], "bpu", roots);
  std::set<std::string> node_fields, tensor_fields, model_fields;
  for (const auto& f : node.fields()) node_fields.insert(f.first);
  CHECK(node_fields == reserved_node_facts());
  for (const auto& f : node.field("input")->items()[0].fields()) tensor_fields.insert(f.first);
  CHECK(tensor_fields == tensor_fact_fields());
  for (const auto& f : r.facts.model.fields()) model_fields.insert(f.first);
  CHECK(model_fields == model_facts());
}

