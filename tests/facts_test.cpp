#include <doctest/doctest.h>

#include "bpulint/rules/fact_names.h"
#include "bpulint/engine/facts.h"
#include "bpulint/engine/placement.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

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
  const WalkedModel f = walk_model_text(kConvTranspose3d);
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
  const WalkedModel f = walk_model_text(kConvTranspose3d);
  const Value in = *fact(f->nodes[0], "input").items().at(0).field("shape");
  CHECK(in.to_string() == "[N, 128, 2, 6, 6]");  // the dim_param's name
  CHECK(in.items()[0].is_unknown());
  CHECK(in.items()[0].as_string() == "dynamic dim 'N'");
  const Value x = fact(f->nodes[0], "input").items().at(0);
  CHECK(x.field("dtype")->as_string() == "float32");
  CHECK(x.field("rank")->as_int() == 5);
  CHECK_FALSE(x.field("const")->as_bool());
  const Value y = fact(f->nodes[0], "output").items().at(0);
  CHECK(y.field("shape")->to_string() == "[N, 64, 10, 12, 12]");
  CHECK(fact(f->nodes[0], "max_rank").as_int() == 5);
}

TEST_CASE("--input-shape pins dynamic dims and shape inference follows") {
  FactOptions o;
  o.input_shapes["X"] = {2, 128, 2, 6, 6};
  const WalkedModel f = walk_model_text(kConvTranspose3d, o);
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
  const WalkedModel f = walk_model_text(R"(
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
  const WalkedModel f = walk_model_text(R"(
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
  const WalkedModel f = walk_model_text(R"(
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
  const WalkedModel f = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float16[2] X, int8[2] Z) => (float16[2] Y) { Y = Relu (X) }
)");
  CHECK(f->model.field("io_dtypes")->to_string() == "['float16', 'int8']");
  CHECK(f->model.field("duplicate_io_names")->to_string() == "[]");
  CHECK(f->model.field("input")->items().size() == 2);
}

TEST_CASE("a declared output shape that contradicts inference does not lose every shape") {
  const WalkedModel f = walk_model_text(R"(
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
    const WalkedModel f = walk_model_text(std::string(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,3,3,3] X, )") + w + R"() => (float[] Y) {
  Y = ConvTranspose <strides = [2, 2, 2]> (X, W)
}
)");
    CHECK(f->nodes.size() == 1);
  }
  const WalkedModel conv = walk_model_text(R"(
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
  const WalkedModel zero = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] X, float[4,4,3,3] W) => (float[] Y) {
  Y = Conv <strides = [0, 0]> (X, W)
}
)");
  CHECK(zero->nodes.size() == 1);  // ONNX would divide by zero here
  const WalkedModel spoof = walk_model_text(R"(
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
      {"float[N,8,12,20] A, float[N,16,12,20] B", "bdhw,bchw->bcdhw", "[N, 16, 8, 12, 20]"},
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
    const WalkedModel f = walk_model_text(text);
    CHECK(fact(f->nodes[0], "output").items().at(0).field("shape")->to_string() == std::string(c.expected));
  }
  // Contradicting dims for one label: no dims are made up.
  const WalkedModel bad = walk_model_text(R"(
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


namespace {

// The fact `name` of the model's node `op` (the first of that type), read through the record and
// through the on-demand source, which must agree.
std::string moved_fact(const std::string& text, const std::string& op, const std::string& name) {
  const WalkedModel f = walk_model_text(text);
  for (const auto& n : f->nodes) {
    if (n.op_type != op) continue;
    const Value record = node_record(n, "bpu");
    const NodeFactSource source(n, "bpu");
    const Value* slow = record.field(name);
    const Value* fast = source.fact(intern_fact(name), name);
    REQUIRE(slow != nullptr);
    REQUIRE(fast != nullptr);
    CHECK(fast->identical(*slow));
    return slow->is_unknown() ? "? " + slow->as_string() : slow->to_string();  // an unknown with its reason
  }
  FAIL("no " << op << " node");
  return {};
}

std::string model(int opset, const std::string& inputs, const std::string& outputs, const std::string& body) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (" + inputs + ") => (" + outputs +
         ") {\n" + body + "\n}\n";
}

}  // namespace

TEST_CASE("an attribute an opset moved to an input is one fact in both forms") {
  const std::string x4 = "float[1,8,6,4] X";
  // Reduce*: the attribute before 18 (ReduceSum 13), the second input after; absent = all axes.
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceSumSquare", "ReduceSum"}) {
    INFO(op);
    const int old_opset = std::string(op) == "ReduceSum" ? 11 : 17;
    const int new_opset = std::string(op) == "ReduceSum" ? 13 : 18;
    const std::string o(op);
    CHECK(moved_fact(model(old_opset, x4, "float[1,8,1,1] Y", "Y = " + o + " <axes = [2, 3]> (X)"), o, "axes") == "[2, 3]");
    CHECK(moved_fact(model(new_opset, x4, "float[1,8,1,1] Y",
                           "A = Constant <value = int64[2] {2, 3}> ()\nY = " + o + " (X, A)"), o, "axes") == "[2, 3]");
    CHECK(moved_fact(model(old_opset, x4, "float[1,1,1,1] Y", "Y = " + o + " (X)"), o, "axes") == "[0, 1, 2, 3]");
    CHECK(moved_fact(model(new_opset, x4, "float[1,1,1,1] Y", "Y = " + o + " (X)"), o, "axes") == "[0, 1, 2, 3]");
    CHECK(moved_fact(model(new_opset, x4, "float[1,8,6,4] Y", "Y = " + o + " <noop_with_empty_axes = 1> (X)"), o,
                     "axes") == "[]");
  }
  // A runtime axes input is unknown, never "all axes".
  const std::string runtime = moved_fact(model(18, x4 + ", int64[1] A", "float[1,8,6,1] Y", "Y = ReduceMean (X, A)"),
                                         "ReduceMean", "axes");
  CHECK(runtime.find("computed at runtime") != std::string::npos);

  // Squeeze / Unsqueeze at 13; absent Squeeze axes = the dims of size 1.
  const std::string x1 = "float[1,8,1,4] X";
  CHECK(moved_fact(model(11, x1, "float[8,1,4] Y", "Y = Squeeze <axes = [0]> (X)"), "Squeeze", "axes") == "[0]");
  CHECK(moved_fact(model(13, x1, "float[8,1,4] Y", "A = Constant <value = int64[1] {0}> ()\nY = Squeeze (X, A)"),
                   "Squeeze", "axes") == "[0]");
  CHECK(moved_fact(model(13, x1, "float[8,4] Y", "Y = Squeeze (X)"), "Squeeze", "axes") == "[0, 2]");
  CHECK(moved_fact(model(11, x1, "float[1,1,8,1,4] Y", "Y = Unsqueeze <axes = [1]> (X)"), "Unsqueeze", "axes") == "[1]");
  CHECK(moved_fact(model(13, x1, "float[1,1,8,1,4] Y", "A = Constant <value = int64[1] {1}> ()\nY = Unsqueeze (X, A)"),
                   "Unsqueeze", "axes") == "[1]");

  // Split `split` at 13, `num_outputs` at 18; absent = equal parts, one per output.
  CHECK(moved_fact(model(11, x4, "float[1,2,6,4] Y, float[1,6,6,4] Z", "Y, Z = Split <axis = 1, split = [2, 6]> (X)"),
                   "Split", "split") == "[2, 6]");
  CHECK(moved_fact(model(13, x4, "float[1,2,6,4] Y, float[1,6,6,4] Z",
                         "S = Constant <value = int64[2] {2, 6}> ()\nY, Z = Split <axis = 1> (X, S)"),
                   "Split", "split") == "[2, 6]");
  CHECK(moved_fact(model(13, x4, "float[1,4,6,4] Y, float[1,4,6,4] Z", "Y, Z = Split <axis = 1> (X)"), "Split",
                   "split") == "[4, 4]");
  CHECK(moved_fact(model(13, x4, "float[1,4,6,4] Y, float[1,4,6,4] Z", "Y, Z = Split <axis = 1> (X)"), "Split",
                   "num_outputs") == "2");
  CHECK(moved_fact(model(18, x4, "float[1,3,6,4] Y, float[1,3,6,4] Z, float[1,2,6,4] W",
                         "Y, Z, W = Split <axis = 1, num_outputs = 3> (X)"),
                   "Split", "split") == "[3, 3, 2]");

  // Pad `pads` (and `value`) at 11; Pad-18's `axes` spreads them over every axis.
  CHECK(moved_fact(model(10, x4, "float[1,8,8,6] Y", "Y = Pad <pads = [0, 0, 1, 1, 0, 0, 1, 1]> (X)"), "Pad", "pads") ==
        "[0, 0, 1, 1, 0, 0, 1, 1]");
  const std::string pad11 = "P = Constant <value = int64[8] {0, 0, 1, 1, 0, 0, 1, 1}> ()\nY = Pad (X, P)";
  CHECK(moved_fact(model(11, x4, "float[1,8,8,6] Y", pad11), "Pad", "pads") == "[0, 0, 1, 1, 0, 0, 1, 1]");
  CHECK(moved_fact(model(11, x4, "float[1,8,8,6] Y", pad11), "Pad", "value") == "0");
  CHECK(moved_fact(model(18, x4, "float[1,8,8,6] Y",
                         "P = Constant <value = int64[4] {1, 1, 1, 1}> ()\nA = Constant <value = int64[2] {2, -1}> ()\n"
                         "Y = Pad (X, P, , A)"),
                   "Pad", "pads") == "[0, 0, 1, 1, 0, 0, 1, 1]");

  // Clip `min`/`max` at 11; absent = the float range.
  CHECK(moved_fact(model(6, x4, "float[1,8,6,4] Y", "Y = Clip <min = 0.0, max = 6.0> (X)"), "Clip", "max") == "6");
  const std::string clip11 = "L = Constant <value = float {0.0}> ()\nH = Constant <value = float {6.0}> ()\nY = Clip (X, L, H)";
  CHECK(moved_fact(model(11, x4, "float[1,8,6,4] Y", clip11), "Clip", "min") == "0");
  CHECK(moved_fact(model(11, x4, "float[1,8,6,4] Y", clip11), "Clip", "max") == "6");
  CHECK(moved_fact(model(11, x4, "float[1,8,6,4] Y", "Y = Clip (X)"), "Clip", "min") ==
        moved_fact(model(6, x4, "float[1,8,6,4] Y", "Y = Clip (X)"), "Clip", "min"));

  // Slice at 10: starts, ends, axes, steps (axes 0.. and steps 1 when absent).
  CHECK(moved_fact(model(9, x4, "float[1,8,2,4] Y", "Y = Slice <starts = [1], ends = [3], axes = [2]> (X)"), "Slice",
                   "axes") == "[2]");
  CHECK(moved_fact(model(9, x4, "float[1,8,2,4] Y", "Y = Slice <starts = [1], ends = [3], axes = [2]> (X)"), "Slice",
                   "steps") == "[1]");
  const std::string slice10 =
      "S = Constant <value = int64[1] {1}> ()\nE = Constant <value = int64[1] {3}> ()\nY = Slice (X, S, E)";
  CHECK(moved_fact(model(10, x4, "float[1,8,6,4] Y", slice10), "Slice", "starts") == "[1]");
  CHECK(moved_fact(model(10, x4, "float[1,8,6,4] Y", slice10), "Slice", "ends") == "[3]");
  CHECK(moved_fact(model(10, x4, "float[1,8,6,4] Y", slice10), "Slice", "axes") == "[0]");
  CHECK(moved_fact(model(10, x4, "float[1,8,6,4] Y", slice10), "Slice", "steps") == "[1]");

  // TopK `k` at 10 (a 1-element tensor), one integer in both forms.
  CHECK(moved_fact(model(9, "float[1,16] X", "float[1,3] V, int64[1,3] I", "V, I = TopK <k = 3> (X)"), "TopK", "k") == "3");
  CHECK(moved_fact(model(10, "float[1,16] X", "float[1,3] V, int64[1,3] I",
                         "K = Constant <value = int64[1] {3}> ()\nV, I = TopK (X, K)"),
                   "TopK", "k") == "3");

  // Upsample `scales` at 9; Resize `scales` (input 1 at 10, 2 from 11) and `sizes`.
  CHECK(moved_fact(model(8, x4, "float[1,8,12,8] Y", "Y = Upsample <scales = [1.0, 1.0, 2.0, 2.0]> (X)"), "Upsample",
                   "scales") == "[1, 1, 2, 2]");
  const std::string scales = "S = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()\n";
  CHECK(moved_fact(model(9, x4, "float[1,8,12,8] Y", scales + "Y = Upsample (X, S)"), "Upsample", "scales") ==
        "[1, 1, 2, 2]");
  CHECK(moved_fact(model(10, x4, "float[1,8,12,8] Y", scales + "Y = Resize (X, S)"), "Resize", "scales") ==
        "[1, 1, 2, 2]");
  CHECK(moved_fact(model(13, x4, "float[1,8,12,8] Y", scales + "Y = Resize (X, , S)"), "Resize", "scales") ==
        "[1, 1, 2, 2]");
  CHECK(moved_fact(model(13, x4, "float[1,8,12,8] Y",
                         "Z = Constant <value = int64[4] {1, 8, 12, 8}> ()\nY = Resize (X, , , Z)"),
                   "Resize", "sizes") == "[1, 8, 12, 8]");
}

TEST_CASE("consumers: the op types that read a tensor, '' for a graph output") {
  const WalkedModel f = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,16,8,8] X, float[16,16,1,1] W) => (float[1,16,8,8] Y, float[1,16,8,8] C) {
  C = Conv (X, W)
  A = Add (X, C)
  R = Relu (A)
  Y = Mul (R, R)
}
)");
  const Consumers consumers(f.facts);
  const auto of = [&](size_t node, bool input, size_t k) {
    const NodeFacts& n = f->nodes[node];
    return consumers.of(input ? n.inputs[k] : n.outputs[k]).to_string();
  };
  CHECK(of(0, false, 0) == "['Add', '']");  // C: the Add and a graph output
  CHECK(of(1, false, 0) == "['Relu']");
  CHECK(of(2, false, 0) == "['Mul']");       // read twice by one node: once
  CHECK(of(3, false, 0) == "['']");
  CHECK(of(0, true, 0) == "['Conv', 'Add']");  // a graph input
  const NodeFactSource source(f->nodes[1], "bpu", &consumers);
  CHECK(source.element_field(intern_fact("output"), 0, intern_fact("consumers"))->to_string() == "['Relu']");
  CHECK(node_record(f->nodes[1], "bpu").field("output")->items()[0].field("consumers")->is_unknown());
}
