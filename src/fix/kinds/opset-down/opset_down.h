// Opset down-conversion (issue 43, item 4): the model at a lower
// default-domain opset (X5's and X3's hb_mapper take 11 at most: BPU9102,
// BPU9103), by the ONNX library's own version converter, or the op that
// blocks it.
//
// Weights never pass through the converter: every external or large tensor
// (a LoadedModel's lean copy has all of them external) is swapped for an
// empty stand-in of the same name, type and dims while it converts, and put
// back, as the same external reference, after. The converter's adapters read
// only small constants (axes, shapes, split sizes, pads, scales), which stay.
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "bpulint/model/model_loader.h"

namespace bpulint {

struct OpsetConversion {
  bool ok = false;       // converted (or already at or below the target) and proven
  bool changed = false;  // the model's opset was above the target
  int64_t from = 0;      // the model's default-domain opset
  int64_t to = 0;        // the target
  // Why not, one line, when !ok: the converter's refusal, or the proof's.
  std::string reason;
  // The op the converter refused (from its message), "" when it named none.
  std::string blocking_op;
  onnx::ModelProto model;  // the converted model (weights still external references into the source)
  size_t nodes_before = 0, nodes_after = 0;
  size_t weights_set_aside = 0;  // tensors swapped for stand-ins while converting
  double seconds = 0;            // converting and proving
};

// Converts `model` (a LoadedModel's lean copy) to `target`, then proves the
// result: the ONNX checker (external data resolved against `model_dir`, never
// read) and strict shape inference. Never throws.
OpsetConversion convert_opset(const onnx::ModelProto& model, int64_t target, const std::string& model_dir = ".");

// Writes a proven conversion atomically by the output policy (model_writer.h),
// its weights copied file to file from `source` (to <out>.data with
// `external_data`, as --external-data). `conversion.model` is consumed.
bool write_opset_conversion(const LoadedModel& source, OpsetConversion& conversion, const std::string& out_path,
                            std::string& error, bool external_data = false);

// The op named in a converter message ("No Previous Version of X exists",
// "... for X ..."), "" when there is none. For the message and the tests.
std::string op_in_converter_message(const std::string& message);

}  // namespace bpulint
