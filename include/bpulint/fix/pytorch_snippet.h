// PyTorch-side replacements for ConvTranspose3d layers that the BPU cannot run.
//
// Teams that fix their PyTorch source instead of the exported ONNX file get a
// drop-in nn.Module per fix kind. Each module is built FROM the original
// nn.ConvTranspose3d (copying its weights), checks the fix's preconditions and
// computes the same output; once exported, the graph holds the BPU-friendly ops
// of the corresponding ONNX rewrite (see include/bpulint/fix/convtranspose3d_rewrite.h).
//
//   fix id            Python class                       preconditions
//   convtranspose2d   ConvTranspose3dAsConvTranspose2d   D axis non-overlapping: kernel D == stride D,
//                                                        padding D 0, output_padding D 0, dilation D 1
//   conv3d-1x1x1      ConvTranspose3dAsConv3d1x1x1       all axes non-overlapping: kernel == stride,
//                                                        padding 0, output_padding 0, dilation 1
//
// The generated Python is plain text: it never executes anything at import
// time beyond defining classes and one function, and module paths that come
// from (untrusted) ONNX node names are validated before they are written into
// code, so a crafted node name cannot inject Python.
#pragma once

#include <string>
#include <vector>

#include "bpulint/fix/conv_params.h"

namespace bpulint {

// Python source of the replacement nn.Module class for a fix kind; "" for an
// unknown id. The source assumes `import torch` and `from torch import nn`.
std::string pytorch_module_source(const std::string& fix_id);

// Name of that class ("ConvTranspose3dAsConvTranspose2d", ...); "" for an unknown id.
std::string pytorch_module_class(const std::string& fix_id);

// One layer of a snippet file. torch_path is the module's attribute path in the
// model ("deblock_seg_v2.0"), usually from torch_module_path(); "" if unknown.
struct SnippetLayer {
  std::string fix_id;
  ConvTransposeParams params;
  std::string torch_path;
  // A flagged layer that gets no replacement: why, and its ONNX node name; the
  // file then holds a comment saying so instead of a usage block.
  std::string not_replaced = {};
  std::string onnx_name = {};
};

// A complete, runnable Python file: imports, each needed class once, the
// helpers that resolve and swap, and a function `apply_bpu_lint_fixes(model)`
// holding one usage block per layer:
//   # <path>: C_in=.., C_out=.., kernel=.., stride=.., padding=.., output_padding=.., dilation=.., groups=.., bias=..
//   # <path>: nn.ConvTranspose3d(<the constructor call matching these parameters>)
//   layers.append(("<path>", <Class>, dict(in_channels=.., ..., bias=..)))
// The path is resolved against the live model when the function runs, not
// here: the literal path first, then with torch.onnx's call-count suffixes
// dropped ("shared_1" -> "shared": a layer forward() calls twice), and, for a
// container forward() never calls, the one submodule whose name ends in it; a
// candidate counts only if it is an nn.ConvTranspose3d with the exported
// parameters (so a real attribute "up_1" and up's second call, also "up_1",
// are told apart). Every path is resolved and every replacement built before
// anything is swapped: on any failure the function raises (LookupError naming
// the paths, or the class's ValueError) with the model unchanged. A module
// found under several paths is replaced once, at every name it is registered
// under.
// Notes are added as comments when the ONNX pads are asymmetric (PyTorch only
// has symmetric padding: an equivalent padding/output_padding pair is given
// when one exists, otherwise the constructor is marked "NOT an exact match"),
// when the parameters do not meet the class's preconditions (its constructor
// would raise ValueError), and when the module path is unknown (the assignment
// is then left commented out). A layer whose fix id is unknown or whose kernel
// is not 3-D gets a comment instead of a block; a repeated path with the same
// parameters is listed once.
// A layer with `not_replaced` set gets "# <path> (ONNX node '<name>'): not
// replaced: <reason>" (model text in comments is reduced to printable ASCII,
// so it cannot end the comment), and an entry in the function's not_replaced
// list (escaped string literals), which it names in a warnings.warn after the
// swap. A candidate module that does more than nn.ConvTranspose3d (a subclass
// overriding forward(), e.g. a QAT layer fake-quantising its weight; a
// parametrized weight; forward hooks) never matches: the float replacement
// would drop that, so the function raises LookupError saying so.
std::string pytorch_snippet_file(const std::vector<SnippetLayer>& layers);

// The same file for a single layer; "" when fix_id is unknown or the
// parameters are not those of a 3-D ConvTranspose.
std::string pytorch_snippet(const std::string& fix_id, const ConvTransposeParams& p, const std::string& torch_path);

// ONNX node name -> PyTorch module path, following the TorchScript-based
// torch.onnx exporter (torch >= 1.13), which names a node
// "/<scope>/<scope>/.../<OpType>[_N]". Each scope is the module's qualified name
// from its last non-numeric atom on ("deblock_seg_v2.0", "up", "blocks.0"), so
// the full path is rebuilt by joining scopes, merging a scope that repeats its
// parent's unqualified name:
//   "/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose" -> "deblock_seg_v2.0"
//   "/enc/enc.2/enc.2.0/up/ConvTranspose"             -> "enc.2.0.up"
// A numeric atom that torch de-duplicated because the module was called twice
// ("seq.0_1") is restored ("seq.0"); a non-numeric one ("top_1") cannot be told
// apart from a real name here and is kept, for the snippet to decide against the
// live model. Containers that are never called (a ModuleDict holding a
// ModuleList) leave no scope, so such prefixes are lost here too (the snippet
// finds them by the path's end).
// Returns "" when the name does not look like an exported scope (older
// exporters' "ConvTranspose_3", nodes at the top level, atoms with characters
// other than [A-Za-z0-9_-]).
std::string torch_module_path(const std::string& onnx_node_name);

}  // namespace bpulint
