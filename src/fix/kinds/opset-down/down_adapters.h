// The downward steps ONNX 1.17's version converter lacks between opsets 17
// and 11 (it registers most changes of 13-16 upward only, so an opset-17
// torch export cannot go below 16: "No Adapter From Version $16 for
// Identity"), registered on a converter before it runs.
#pragma once

#include <onnx/version_converter/convert.h>

namespace bpulint {

// Each step is one of ONNX's changelog entries read backwards:
//  - type extensions (bfloat16 at 13, more integer types at 14, optional and
//    sequence types at 14/16): the node is unchanged; a model that uses a new
//    type fails the proof's strict type check instead.
//  - an attribute or mode added with the old behaviour as its default
//    (Reshape allowzero, Shape start/end, Scatter reduction, GatherND
//    batch_dims, BatchNormalization training_mode, RoiAlign's
//    coordinate_transformation_mode, Constant's value_* forms): removed when
//    it holds the old behaviour, refused naming the op otherwise.
//  - Softmax, LogSoftmax and Hardmax at 13 (one axis instead of flattening
//    from it): the same only along the last axis; the axis is made explicit.
//  - Resize at 13 (roi and scales optional): an empty roi or scales is given
//    as an empty tensor, as opset 11 takes it (prepare_resize_inputs).
//  - Dropout at 12 (ratio and training_mode as inputs): 11 runs it as the
//    identity, the same when training is off or its ratio is 0, the mask unread.
// A refusal says "cannot take OP below opset N: why".
void register_down_adapters(onnx::version_conversion::DefaultVersionConverter& converter);

// Names every empty roi/scales input of the model's Resize nodes (13 makes
// them optional; 11 needs a tensor) after one empty float initializer per
// graph. Run on the model before converting it below 13.
void prepare_resize_inputs(onnx::ModelProto& model);

// Every small int64 initializer (not a graph input) becomes a Constant node
// of the same value, at any depth. ONNX 1.17's adapters that turn an input
// into an attribute (Split's split, Squeeze's and Reduce*'s axes, 13 -> 12)
// read an initializer's int64_data only (torch writes raw_data), and erasing
// the initializer after frees a value they read again; their Constant-node
// path has neither fault. Run on the model before converting it.
void int64_initializers_to_constants(onnx::ModelProto& model);

}  // namespace bpulint
