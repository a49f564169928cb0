// Host-side split (issue 43, item 3): the trailing CPU region of a model
// (detection post-processing: TopK, NonZero, NMS, the decode's Gathers and
// Casts; an X5 classifier's last Reshape) cut off into a model of its own
// that runs on the host, after the BPU model.
//
// Which nodes move, over the main graph's nodes (a node's subgraphs go with it):
//  - host work: a node placed Cpu, Unknown (no public source puts the op on
//    the BPU; the toolchain runs what it cannot place on the CPU) or
//    DataShape (shape arithmetic on data-dependent shapes: after NonZero or
//    NMS only the host has the data). On J6P, TopK, NonZero, NMS and the
//    post-processing's Gathers are Unknown, not Cpu. Folded, RuntimeShape and
//    NoCompile nodes are not host work by themselves.
//  - anchored: a layer on the BPU (Conv, ConvTranspose, MatMul, Gemm, Einsum,
//    the RNNs: what the BPU is for), and every node it reads from, directly or
//    not. Never moves. (Without any layer on the BPU, every BPU node anchors.)
//  - the tail: the host work that is not anchored (its seeds), and everything
//    downstream of it, whatever its placement: the cheap BPU work below the
//    post-processing (a box decode's Mul and Add, the final Concat) cannot run
//    before it, and moves with it (counted as tail_bpu).
//  - also the tail: a node that is not anchored, feeds only the tail, writes
//    no graph output, and reads only constants (initializers, constant-only
//    nodes) or values the tail reads anyway: the Constants and shape
//    arithmetic under the post-processing, so it adds no frontier tensor.
// Everything else is the head (`<stem>.bpu.onnx`), host work that feeds a
// layer included: the split moves only the tail.
//
// The frontier: the values the tail reads that the head computes, and the
// graph inputs it reads; a value the lint folded to a constant is given to
// the tail as an initializer instead (the toolchain folds it: it is no BPU
// output). The head's outputs are its original graph outputs,
// then the frontier values it computes; the tail's inputs are the frontier
// (types and shapes as the lint inferred them), its outputs the original
// graph outputs it computes. Initializers go to the part that reads them
// (both when both do), as the same TensorProto: a LoadedModel's weights are
// external references into the model file, copied file to file by the writer
// and never read into memory.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "bpulint/engine/facts.h"
#include "bpulint/engine/placement.h"
#include "bpulint/model/model_loader.h"

namespace bpulint {

struct HostSplitPlan {
  bool applies = false;
  std::string reason;  // why not, one line, when !applies

  bool layers_anchor = false;   // a layer is on the BPU (else every BPU node anchored the head)
  std::vector<int> tail_nodes;  // indices into the main graph's node list, in graph order
  size_t head_node_count = 0;   // main-graph nodes in the head
  // Of them placed Bpu / Cpu / Unknown or DataShape (host work that feeds a layer stays).
  size_t head_bpu = 0, head_cpu = 0, head_unknown = 0;
  // Tail nodes placed Cpu / Unknown or DataShape / Bpu (cheap BPU work moved with the post-processing).
  size_t tail_cpu = 0, tail_unknown = 0, tail_bpu = 0;

  // The tail's inputs: graph inputs it reads (original order), then values the head computes (graph order).
  std::vector<std::string> frontier;
  size_t frontier_graph_inputs = 0;  // the first this many of `frontier` are graph inputs
  // Head values the tail reads that the lint folded to constants (a Constant's
  // value, shape arithmetic on static dims): tail initializers holding the
  // folded value, not frontier tensors.
  std::vector<std::string> constants;
  std::vector<std::string> head_outputs;  // original outputs the head computes (or passes through), then the frontier
  std::vector<std::string> tail_outputs;  // original outputs the tail computes
  // The two models, ready to prove and write (weights are the source's references).
  onnx::ModelProto head, tail;
};

// `facts` and `placement` are the lint's for `model` (ModelReport::facts and
// ::placement: one entry per ModelFacts::nodes, subgraph nodes included).
// Never throws; the plan says why not when the split does not apply.
HostSplitPlan plan_host_split(const LoadedModel& model, const ModelFacts& facts, const std::vector<Placement>& placement);

// The in-binary proof: every main-graph node of the original is in exactly
// one part (same proto), every tail input is a head output or a graph input,
// head and tail outputs together are the original outputs, and each part
// passes the ONNX checker (external data resolved in `model_dir`, never read)
// and strict shape inference. False with the first failure, one line.
bool prove_host_split(const onnx::ModelProto& original, const HostSplitPlan& plan, const std::string& model_dir,
                      std::string& error);

// <dir>/<stem>.bpu.onnx and <dir>/<stem>.host.onnx beside the input.
struct HostSplitPaths {
  std::string bpu, host;
};
HostSplitPaths default_host_split_paths(const std::string& input_path);

// The two outputs' roles in the run's plan of reads and writes (io_plan.h):
// a command line that plans them before linting uses the same words.
inline constexpr const char* kHostSplitBpuRole = "the BPU part of the host split (--fix)";
inline constexpr const char* kHostSplitHostRole = "the host part of the host split (--fix)";

// Proves the plan, then writes both parts by the output policy
// (output_file.h): both land or neither does (each is complete and synced
// before either is put in place). The two paths must be different files.
// `plan`'s models are consumed. `external_data` (--external-data): weights go
// to <part>.data beside each part (automatic past protobuf's 2 GiB). False
// with one line naming the file or the failed proof; nothing is written then.
bool write_host_split(const LoadedModel& source, HostSplitPlan& plan, const HostSplitPaths& paths, std::string& error,
                      bool external_data = false);

}  // namespace bpulint
