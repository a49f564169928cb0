// The host split (src/fix/kinds/host_split): which nodes move, the frontier,
// the proof, and writing both parts or neither. tests/fix_kinds/run.sh runs
// the parts in ONNX Runtime on torchvision detectors.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "bpulint/model/model_loader.h"
#include "host-split/host_split.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

std::set<std::string> ops(const onnx::GraphProto& g) {
  std::set<std::string> out;
  for (const auto& n : g.node()) out.insert(n.op_type());
  return out;
}

std::vector<std::string> names(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& list) {
  std::vector<std::string> out;
  for (const auto& v : list) out.push_back(v.name());
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("host split: the TopK and NonZero tail after a Conv moves, the Conv's output is the frontier") {
  TempDir dir;
  const ModelReport r = lint_model(save_conv_topk(dir), platform("j6p"));
  REQUIRE(r.ok);
  HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
  INFO(plan.reason);
  REQUIRE(plan.applies);
  CHECK(plan.head_node_count == 1);
  CHECK(plan.tail_nodes.size() == 5);  // Constant, Flatten, TopK, Greater, NonZero
  CHECK(ops(plan.head.graph()) == std::set<std::string>{"Conv"});
  CHECK(ops(plan.tail.graph()) == std::set<std::string>{"Constant", "Flatten", "TopK", "Greater", "NonZero"});
  CHECK(plan.frontier == std::vector<std::string>{"feat"});
  CHECK(plan.frontier_graph_inputs == 0);
  CHECK(plan.head_outputs == std::vector<std::string>{"feat"});  // an original output, and the frontier
  CHECK(plan.tail_outputs == std::vector<std::string>{"scores", "indices", "where"});
  CHECK(names(plan.head.graph().input()) == std::vector<std::string>{"x"});
  CHECK(names(plan.tail.graph().input()) == std::vector<std::string>{"feat"});
  // The tail's input is declared with the type the lint inferred.
  const auto& feat = plan.tail.graph().input(0).type().tensor_type();
  CHECK(feat.elem_type() == onnx::TensorProto::FLOAT);
  CHECK(feat.shape().dim_size() == 4);
  CHECK(feat.shape().dim(1).dim_value() == 32);
  // Initializers by use; the weight is the loader's reference into the file, never its bytes.
  REQUIRE(plan.head.graph().initializer_size() == 2);
  CHECK(plan.head.graph().initializer(0).name() == "W");
  CHECK(plan.head.graph().initializer(0).data_location() == onnx::TensorProto::EXTERNAL);
  REQUIRE(plan.tail.graph().initializer_size() == 1);
  CHECK(plan.tail.graph().initializer(0).name() == "threshold");
  // What the model says of itself goes to both parts.
  for (const auto* part : {&plan.head, &plan.tail}) {
    CHECK(part->ir_version() == 8);
    CHECK(part->producer_name() == "split-test");
    CHECK(part->metadata_props_size() == 1);
    REQUIRE(part->opset_import_size() == 1);
    CHECK(part->opset_import(0).version() == 17);
  }
  std::string error;
  CHECK_MESSAGE(prove_host_split(*r.loaded->model, plan, r.loaded->folder, error), error);
}

TEST_CASE("host split: both parts are written, self-contained, with the weight's bytes copied") {
  TempDir dir;
  const std::string path = save_conv_topk(dir);
  const ModelReport r = lint_model(path, platform("j6p"));
  REQUIRE(r.ok);
  HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
  REQUIRE(plan.applies);
  const HostSplitPaths paths = default_host_split_paths(path);
  CHECK(paths.bpu == dir.path("conv_topk.bpu.onnx"));
  CHECK(paths.host == dir.path("conv_topk.host.onnx"));
  std::string error;
  REQUIRE_MESSAGE(write_host_split(*r.loaded, plan, paths, error), error);
  LoadedModel head, tail, original;
  REQUIRE(load_model(paths.bpu, head, error));
  REQUIRE(load_model(paths.host, tail, error));
  REQUIRE(load_model(path, original, error));
  CHECK(head.model->graph().node_size() == 1);
  CHECK(tail.model->graph().node_size() == 5);
  std::string want, got;
  REQUIRE(read_tensor_bytes(original, original.model->graph().initializer(0), want, error));
  REQUIRE(read_tensor_bytes(head, head.model->graph().initializer(0), got, error));
  CHECK(want.size() == 32 * 16 * 3 * 3 * 4);
  CHECK(want == got);
  // Re-linted, the BPU part has no node off the BPU.
  const ModelReport again = lint_model(paths.bpu, platform("j6p"));
  REQUIRE(again.ok);
  CHECK(again.summary.cpu == 0);
  CHECK(again.summary.unknown == 0);
  CHECK(again.summary.bpu == 1);
}

TEST_CASE("host split: a write that cannot land leaves neither part") {
  TempDir dir;
  const std::string path = save_conv_topk(dir);
  const ModelReport r = lint_model(path, platform("j6p"));
  REQUIRE(r.ok);
  std::string error;
  {
    HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
    CHECK_FALSE(write_host_split(*r.loaded, plan, {dir.path("a.onnx"), dir.path("no/such/folder/b.onnx")}, error));
    CHECK(error.find("b.onnx") != std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
    CHECK_FALSE(exists(dir.path("a.onnx")));
  }
  {
    HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
    CHECK_FALSE(write_host_split(*r.loaded, plan, {dir.path("same.onnx"), dir.path("same.onnx")}, error));
    CHECK(error.find("is also the BPU part's output") != std::string::npos);
    CHECK_FALSE(exists(dir.path("same.onnx")));
  }
  {
    HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
    CHECK_FALSE(write_host_split(*r.loaded, plan, {dir.path("c.onnx"), path}, error));  // the input itself
    CHECK_FALSE(exists(dir.path("c.onnx")));
  }
}

TEST_CASE("host split: the proof catches a lost node, a dangling tail input and a doubled output") {
  TempDir dir;
  const ModelReport r = lint_model(save_conv_topk(dir), platform("j6p"));
  REQUIRE(r.ok);
  std::string error;
  {
    HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
    plan.tail.mutable_graph()->mutable_node()->RemoveLast();
    CHECK_FALSE(prove_host_split(*r.loaded->model, plan, r.loaded->folder, error));
    CHECK(error.find("in neither part") != std::string::npos);
  }
  {
    HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
    plan.tail.mutable_graph()->mutable_input(0)->set_name("nowhere");
    CHECK_FALSE(prove_host_split(*r.loaded->model, plan, r.loaded->folder, error));
    CHECK(error.find("neither a head output nor a graph input") != std::string::npos);
  }
  {
    HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
    *plan.head.mutable_graph()->add_output() = plan.tail.graph().output(0);
    CHECK_FALSE(prove_host_split(*r.loaded->model, plan, r.loaded->folder, error));
    CHECK(error.find("both parts") != std::string::npos);
  }
}

TEST_CASE("host split: does not apply without a CPU tail") {
  const ModelReport all_bpu = lint_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y) <float[4,4,1,1] w = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}> {
  c = Conv (x, w)
  y = Relu (c)
}
)");
  HostSplitPlan plan = plan_host_split(*all_bpu.loaded, all_bpu.facts, all_bpu.placement);
  CHECK_FALSE(plan.applies);
  CHECK(plan.reason == "no node is on the CPU");

  // TopK's indices feed a Conv (through Gather): host work that feeds a layer stays.
  const ModelReport upstream = lint_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y) <float[4,2,1,1] w = {1, 2, 3, 4, 5, 6, 7, 8}> {
  s = ReduceMean <axes = [0, 2, 3], keepdims = 0> (x)
  k = Constant <value = int64[1] {2}> ()
  v, i = TopK (s, k)
  g = Gather <axis = 1> (x, i)
  y = Conv (g, w)
}
)");
  plan = plan_host_split(*upstream.loaded, upstream.facts, upstream.placement);
  CHECK_FALSE(plan.applies);
  CHECK(plan.reason.find("feeds a layer on the BPU") != std::string::npos);

  const ModelReport no_bpu = lint_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16] x) => (float[1,3] v, int64[1,3] i) {
  k = Constant <value = int64[1] {3}> ()
  v, i = TopK (x, k)
}
)");
  plan = plan_host_split(*no_bpu.loaded, no_bpu.facts, no_bpu.placement);
  CHECK_FALSE(plan.applies);
  CHECK(plan.reason.find("no node is on the BPU") != std::string::npos);
}

TEST_CASE("host split: a classifier's trailing Reshape, CPU on X3, goes to the host, while on X5 it is a BPU node") {
  TempDir dir;
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[1,3,32,32] x) => (float[1,16] y) <int64[2] shape = {1, 16}> {
  c = Conv <pads = [1, 1, 1, 1]> (x, W)
  r = Relu (c)
  p = GlobalAveragePool (r)
  y = Reshape (p, shape)
}
)");
  std::mt19937 rng(11);
  *m.mutable_graph()->add_initializer() = float_tensor("W", {16, 3, 3, 3}, random_floats(16 * 3 * 3 * 3, rng), true);
  const std::string path = save_model(dir, "cls.onnx", m);
  const ModelReport x3 = lint_model(path, platform("bernoulli2"));
  REQUIRE(x3.ok);
  HostSplitPlan plan = plan_host_split(*x3.loaded, x3.facts, x3.placement);
  INFO(plan.reason);
  REQUIRE(plan.applies);
  CHECK(ops(plan.tail.graph()) == std::set<std::string>{"Reshape"});
  CHECK(plan.tail_cpu == 1);
  CHECK(plan.frontier == std::vector<std::string>{"p"});
  std::string error;
  REQUIRE_MESSAGE(write_host_split(*x3.loaded, plan, default_host_split_paths(path), error), error);
  const ModelReport head = lint_model(dir.path("cls.bpu.onnx"), platform("bernoulli2"));
  REQUIRE(head.ok);
  CHECK(head.summary.cpu == 0);

  const ModelReport x5 = lint_model(path, platform("bayes-e"));
  REQUIRE(x5.ok);
  plan = plan_host_split(*x5.loaded, x5.facts, x5.placement);
  CHECK_FALSE(plan.applies);
  CHECK(plan.reason == "no node is on the CPU");
}

TEST_CASE("host split: with external data each part's weights go to its own .data file") {
  TempDir dir;
  const std::string path = save_conv_topk(dir);
  const ModelReport r = lint_model(path, platform("j6p"));
  REQUIRE(r.ok);
  HostSplitPlan plan = plan_host_split(*r.loaded, r.facts, r.placement);
  REQUIRE(plan.applies);
  std::string error;
  REQUIRE_MESSAGE(write_host_split(*r.loaded, plan, default_host_split_paths(path), error, /*external_data=*/true),
                  error);
  CHECK(exists(dir.path("conv_topk.bpu.onnx.data")));  // the Conv's 18 KiB weight
  LoadedModel head, original;
  REQUIRE(load_model(dir.path("conv_topk.bpu.onnx"), head, error));
  REQUIRE(load_model(path, original, error));
  std::string want, got;
  REQUIRE(read_tensor_bytes(original, original.model->graph().initializer(0), want, error));
  REQUIRE(read_tensor_bytes(head, head.model->graph().initializer(0), got, error));
  CHECK(want == got);
}
