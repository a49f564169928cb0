// fuzz_fix: small structured mutations of a tiny ConvTranspose3d model, then
// lint -> apply_fixes to a temp path. The fuzz input picks the layer:
// kernel/stride/pads/output_padding/dilations/group/channels/input shape
// (all within small bounds, so the reference kernels stay fast), bias or not,
// static or dynamic batch, typed or raw weights, the node name (empty, or one
// that collides with the names a rewrite makes), weights shared with a second
// node, and the strategy. Invariants:
//   - apply_fixes never crashes and refuses cleanly (every result that is not
//     applied says why; a run that wrote nothing with applied results has an error);
//   - when it writes, every applied result was proven (max_abs_error <= 1e-5)
//     and the written model lints again.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "bpulint/fix/fix_apply.h"
#include "bpulint/lint/lint.h"
#include "ct3d_model.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

onnx::TensorProto weights(const std::string& name, const std::vector<int64_t>& dims, bool raw, FuzzedDataProvider& fdp) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= d;
  }
  const uint32_t seed = fdp.ConsumeIntegral<uint32_t>();
  std::string bytes;
  for (int64_t i = 0; i < n; ++i) {
    // Small exact values (multiples of 1/8 in [-2, 2)): sums stay exact.
    const float v = static_cast<float>(static_cast<int>((seed * 2654435761u + static_cast<uint32_t>(i) * 40503u) >> 27) - 16) / 8.0f;
    if (raw) bytes.append(reinterpret_cast<const char*>(&v), 4);
    else t.add_float_data(v);
  }
  if (raw) t.set_raw_data(bytes);
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const int64_t group = fdp.ConsumeIntegralInRange<int64_t>(1, 3);
  const int64_t c_in = group * fdp.ConsumeIntegralInRange<int64_t>(1, 3);
  const int64_t c_out = group * fdp.ConsumeIntegralInRange<int64_t>(1, 3);
  std::vector<int64_t> kernel(3), strides(3), dil(3), outpad(3), pads(6), in(3);
  for (auto* v : {&kernel, &strides}) for (auto& x : *v) x = fdp.ConsumeIntegralInRange<int64_t>(1, 3);
  for (auto& x : dil) x = fdp.ConsumeIntegralInRange<int64_t>(1, 2);
  for (auto& x : outpad) x = fdp.ConsumeIntegralInRange<int64_t>(0, 2);
  for (auto& x : pads) x = fdp.ConsumeIntegralInRange<int64_t>(0, 2);
  for (auto& x : in) x = fdp.ConsumeIntegralInRange<int64_t>(1, 4);
  const int64_t batch = fdp.ConsumeIntegralInRange<int64_t>(0, 2);  // 0 = dynamic "N"
  const bool bias = fdp.ConsumeBool();
  const bool raw = fdp.ConsumeBool();
  const bool shared = fdp.ConsumeBool();
  const bool relu = fdp.ConsumeBool();
  const int which_name = fdp.ConsumeIntegralInRange<int>(0, 3);
  const int which_strategy = fdp.ConsumeIntegralInRange<int>(0, 3);
  const int attr_mask = fdp.ConsumeIntegral<uint8_t>();  // which attributes are written (others default)

  const std::string names[] = {"ct", "", "ct_fix_transpose_in", "W_fix_convtranspose2d"};
  models::Ct3dModel spec;
  spec.batch = batch == 0 ? "N" : std::to_string(batch);
  spec.c_in = c_in;
  spec.c_out = c_out;
  spec.group = group;
  spec.spatial = in;
  spec.kernel = kernel;
  spec.name = names[which_name];
  spec.write_kernel_shape = (attr_mask & 1) != 0;
  if (attr_mask & 2 || strides != std::vector<int64_t>{1, 1, 1}) spec.strides = strides;
  if (attr_mask & 4 || pads != std::vector<int64_t>(6, 0)) spec.pads = pads;
  if (attr_mask & 8 || outpad != std::vector<int64_t>(3, 0)) spec.output_padding = outpad;
  if (attr_mask & 16 || dil != std::vector<int64_t>{1, 1, 1}) spec.dilations = dil;
  spec.write_group = (attr_mask & 32) != 0;
  spec.bias = bias;
  spec.relu = relu ? "relu" : "";
  spec.output_shape = false;
  onnx::ModelProto m = models::ct3d_model(spec, [&](const std::string& name, const std::vector<int64_t>& dims) {
    return weights(name, dims, raw, fdp);
  });
  if (shared) {  // a second ConvTranspose reads the same weight
    auto* g = m.mutable_graph();
    const onnx::NodeProto& n = g->node(0);
    auto* n2 = g->add_node();
    *n2 = n;
    n2->set_name(n.name().empty() ? "" : n.name() + "_2");
    n2->set_output(0, "Y2");
    auto* out2 = g->add_output();
    out2->set_name("Y2");
    out2->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }

  const std::string path = fuzz::temp_dir() + "/ct.onnx";
  const std::string fixed = fuzz::temp_dir() + "/ct.fixed.onnx";
  std::remove(fixed.c_str());
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << m.SerializeAsString();
  }
  const Platform& platform = fuzz::j6p();
  ModelReport report = lint(path, ModelPlan::defaults(platform));
  if (!report.ok) return 0;  // an invalid layer (e.g. output_padding >= stride) may be refused at load
  const char* strategies[] = {"auto", "convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps"};
  FixRun run = apply_fixes(*report.loaded, report.facts, report.fix_plans, strategies[which_strategy], fixed);
  for (const auto& r : run.results) {
    if (!r.applied) FUZZ_CHECK(!r.reason.empty() || r.fix_id.empty(), "a result neither applied nor explained");
    if (!r.applied && !r.fix_id.empty()) FUZZ_CHECK(!r.reason.empty(), "unapplied fix without a reason");
  }
  if (!run.written) {
    FUZZ_CHECK(run.applied() == 0, "results marked applied but nothing written");
    std::ifstream probe(fixed);
    FUZZ_CHECK(!probe.good(), "nothing written, yet the output file exists");
    return 0;
  }
  FUZZ_CHECK(run.applied() > 0, "written without any applied fix");
  for (const auto& r : run.results) {
    if (!r.applied) continue;
    FUZZ_CHECK(r.trials > 0, "applied without trials");
    FUZZ_CHECK(r.max_abs_error >= 0 && r.max_abs_error <= 1e-5,
               "applied fix with max_abs_error " + std::to_string(r.max_abs_error));
  }
  ModelReport again = lint(fixed, ModelPlan::defaults(platform));
  FUZZ_CHECK(again.ok, "the written model does not lint: " + again.error);
  return 0;
}
