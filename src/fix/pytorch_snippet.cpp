#include "bpulint/fix/pytorch_snippet.h"
#include "bpulint/base/strings.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bpulint/fix/fix_catalog.h"
#include "fix_kinds.h"

namespace bpulint {

// ---------------------------------------------------------------------------
// The Python classes. Kept self-contained (no shared helper) so that
// pytorch_module_source() of one kind can be pasted on its own.
// ---------------------------------------------------------------------------

const char* const kTorchConvTranspose2dSource = R"PY(class ConvTranspose3dAsConvTranspose2d(nn.Module):
    """Drop-in replacement for an nn.ConvTranspose3d whose depth (D) axis does not overlap.

    When kernel D == stride D, padding D == 0, output_padding D == 0 and dilation D == 1, every
    input depth slice writes its own disjoint block of KD output slices. The layer is then exactly
    a 2-D ConvTranspose over (H, W) with D folded into the batch and the KD taps folded into the
    output channels: the op the Horizon J6P BPU runs natively, where the 3-D ConvTranspose falls
    back to the CPU. H and W keep any stride, padding, output_padding and dilation; groups and
    bias are supported. Build it from the original layer after its weights are loaded (they are
    copied). Unlike nn.ConvTranspose3d, forward() takes no output_size argument.
    """

    def __init__(self, layer: nn.ConvTranspose3d):
        super().__init__()
        if not isinstance(layer, nn.ConvTranspose3d):
            raise ValueError("ConvTranspose3dAsConvTranspose2d needs an nn.ConvTranspose3d, got "
                             + type(layer).__name__)
        kd, kh, kw = layer.kernel_size
        problems = []
        if layer.stride[0] != kd:
            problems.append(f"stride D {layer.stride[0]} != kernel D {kd}")
        if layer.padding[0] != 0:
            problems.append(f"padding D {layer.padding[0]} != 0")
        if layer.output_padding[0] != 0:
            problems.append(f"output_padding D {layer.output_padding[0]} != 0")
        if layer.dilation[0] != 1:
            problems.append(f"dilation D {layer.dilation[0]} != 1")
        if problems:
            raise ValueError("ConvTranspose3dAsConvTranspose2d needs a non-overlapping depth axis "
                             "(kernel D == stride D, padding D == 0, output_padding D == 0, "
                             "dilation D == 1); this layer has " + ", ".join(problems))
        weight = layer.weight  # [C_in, C_out / groups, KD, KH, KW]
        c_in, c_out_per_group = weight.shape[0], weight.shape[1]
        self.out_channels = layer.out_channels
        self.kd = kd
        # 2-D output channel (within a group) co_l * KD + kd: a pure reshape of the 3-D weight.
        self.conv = nn.ConvTranspose2d(
            c_in, layer.out_channels * kd, (kh, kw), stride=tuple(layer.stride[1:]),
            padding=tuple(layer.padding[1:]), output_padding=tuple(layer.output_padding[1:]),
            groups=layer.groups, bias=layer.bias is not None, dilation=tuple(layer.dilation[1:]),
            device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            self.conv.weight.copy_(weight.reshape(c_in, c_out_per_group * kd, kh, kw))
            if layer.bias is not None:
                self.conv.bias.copy_(layer.bias.repeat_interleave(kd))
        self.train(layer.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (4, 5):
            raise ValueError(f"expected a 4-D (unbatched) or 5-D input, got {x.dim()}-D")
        unbatched = x.dim() == 4
        if unbatched:
            x = x.unsqueeze(0)
        n, c, d, h, w = x.shape
        # [N, C_in, D, H, W] -> [N*D, C_in, H, W]: each depth slice is an independent 2-D image.
        y = self.conv(x.transpose(1, 2).reshape(n * d, c, h, w))
        h_out, w_out = y.shape[-2], y.shape[-1]
        # [N*D, C_out*KD, H', W'] -> [N, C_out, D, KD, H', W'] -> [N, C_out, D*KD, H', W'].
        y = y.reshape(n, d, self.out_channels, self.kd, h_out, w_out).transpose(1, 2)
        y = y.reshape(n, self.out_channels, d * self.kd, h_out, w_out)
        return y.squeeze(0) if unbatched else y
)PY";

const char* const kTorchConv3d1x1x1Source = R"PY(class ConvTranspose3dAsConv3d1x1x1(nn.Module):
    """Drop-in replacement for a non-overlapping nn.ConvTranspose3d (kernel == stride on every axis,
    padding 0, output_padding 0, dilation 1).

    Each input voxel then writes its own disjoint KD x KH x KW output block, so the layer is exactly
    a 1x1x1 Conv3d producing C_out*KD*KH*KW channels followed by a reshape/permute that moves the
    block from the channels back into space. This runs on the Horizon J6P BPU where the 3-D
    ConvTranspose falls back to the CPU. Groups and bias are supported. Build it from the original
    layer after its weights are loaded (they are copied). Unlike nn.ConvTranspose3d, forward()
    takes no output_size argument. Prefer ConvTranspose3dAsConvTranspose2d where it applies: it
    needs KH*KW times fewer intermediate channels.
    """

    def __init__(self, layer: nn.ConvTranspose3d):
        super().__init__()
        if not isinstance(layer, nn.ConvTranspose3d):
            raise ValueError("ConvTranspose3dAsConv3d1x1x1 needs an nn.ConvTranspose3d, got "
                             + type(layer).__name__)
        problems = []
        for axis, k, s, p, op, dil in zip("DHW", layer.kernel_size, layer.stride, layer.padding,
                                           layer.output_padding, layer.dilation):
            if s != k:
                problems.append(f"stride {axis} {s} != kernel {axis} {k}")
            if p != 0:
                problems.append(f"padding {axis} {p} != 0")
            if op != 0:
                problems.append(f"output_padding {axis} {op} != 0")
            if dil != 1:
                problems.append(f"dilation {axis} {dil} != 1")
        if problems:
            raise ValueError("ConvTranspose3dAsConv3d1x1x1 needs a non-overlapping layer (kernel == "
                             "stride, padding 0, output_padding 0, dilation 1 on every axis); this "
                             "layer has " + ", ".join(problems))
        weight = layer.weight  # [C_in, C_out / groups, KD, KH, KW]
        groups = layer.groups
        c_in, c_out_per_group = weight.shape[0], weight.shape[1]
        kd, kh, kw = layer.kernel_size
        taps = kd * kh * kw
        self.out_channels = layer.out_channels
        self.kernel_size = (kd, kh, kw)
        self.conv = nn.Conv3d(c_in, layer.out_channels * taps, 1, groups=groups,
                              bias=layer.bias is not None, device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            # Conv output channel (j*C_out/g + co_l)*K + k reads input channel j*C_in/g + ci with
            # the 3-D weight [j*C_in/g + ci, co_l, kd, kh, kw], k = (kd*KH + kh)*KW + kw.
            w = weight.reshape(groups, c_in // groups, c_out_per_group, taps).permute(0, 2, 3, 1)
            self.conv.weight.copy_(w.reshape(layer.out_channels * taps, c_in // groups, 1, 1, 1))
            if layer.bias is not None:
                self.conv.bias.copy_(layer.bias.repeat_interleave(taps))
        self.train(layer.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (4, 5):
            raise ValueError(f"expected a 4-D (unbatched) or 5-D input, got {x.dim()}-D")
        unbatched = x.dim() == 4
        if unbatched:
            x = x.unsqueeze(0)
        n, _, d, h, w = x.shape
        kd, kh, kw = self.kernel_size
        # [N, C_out*KD*KH*KW, D, H, W] -> [N, C_out, KD, KH, KW, D, H, W]
        y = self.conv(x).reshape(n, self.out_channels, kd, kh, kw, d, h, w)
        # -> [N, C_out, D, KD, H, KH, W, KW] -> [N, C_out, D*KD, H*KH, W*KW]
        y = y.permute(0, 1, 5, 2, 6, 3, 7, 4)
        y = y.reshape(n, self.out_channels, d * kd, h * kh, w * kw)
        return y.squeeze(0) if unbatched else y
)PY";

const char* const kTorchConvTranspose2dDTapsSource = R"PY(class ConvTranspose3dAsConvTranspose2dDTaps(nn.Module):
    """Drop-in replacement for an nn.ConvTranspose3d whose depth (D) axis overlaps.

    Any kernel D, stride D, padding D and output_padding D (dilation D must be 1), for instance
    nn.ConvTranspose3d(c, c2, 3, stride=2, padding=1, output_padding=1). The layer is a 2-D
    ConvTranspose over (H, W) with D folded into the batch and the KD depth taps as extra output
    channels (no bias), then a product with a constant 0/1 matrix that adds tap kd of input depth
    d into output depth d*stride_D + kd - padding_D, then the bias: ops the Horizon J6P BPU runs
    (2-D ConvTranspose, Transpose/Reshape, MatMul, Add), where the 3-D ConvTranspose falls back to
    the CPU. H and W keep any stride, padding, output_padding and dilation; groups and bias are
    supported. The matrix depends on the input depth D and is built in forward(), so an ONNX
    export holds it for the D of the example input (Horizon compiles static shapes). Exact for
    finite values; an inf or NaN that reaches the matrix spreads along D through its zeros.
    Build it from the original layer after its weights are loaded (they are copied). Unlike
    nn.ConvTranspose3d, forward() takes no output_size argument. Where kernel D == stride D with
    no D padding, prefer ConvTranspose3dAsConvTranspose2d: it needs no matrix product.
    """

    def __init__(self, layer: nn.ConvTranspose3d):
        super().__init__()
        if not isinstance(layer, nn.ConvTranspose3d):
            raise ValueError("ConvTranspose3dAsConvTranspose2dDTaps needs an nn.ConvTranspose3d, got "
                             + type(layer).__name__)
        if layer.dilation[0] != 1:
            raise ValueError("ConvTranspose3dAsConvTranspose2dDTaps needs dilation D == 1; this layer has "
                             f"dilation D {layer.dilation[0]}")
        kd, kh, kw = layer.kernel_size
        weight = layer.weight  # [C_in, C_out / groups, KD, KH, KW]
        c_in, c_out_per_group = weight.shape[0], weight.shape[1]
        self.out_channels = layer.out_channels
        self.kd = kd
        self.stride_d = layer.stride[0]
        self.padding_d = layer.padding[0]
        self.output_padding_d = layer.output_padding[0]
        # 2-D output channel (within a group) co_l * KD + kd: a pure reshape of the 3-D weight.
        self.conv = nn.ConvTranspose2d(
            c_in, layer.out_channels * kd, (kh, kw), stride=tuple(layer.stride[1:]),
            padding=tuple(layer.padding[1:]), output_padding=tuple(layer.output_padding[1:]),
            groups=layer.groups, bias=False, dilation=tuple(layer.dilation[1:]),
            device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            self.conv.weight.copy_(weight.reshape(c_in, c_out_per_group * kd, kh, kw))
        # Added after the sum: an output depth that no tap reaches still gets its bias.
        self.bias = None if layer.bias is None else nn.Parameter(layer.bias.detach().clone())
        self.train(layer.training)

    def taps(self, d: int, like: torch.Tensor) -> torch.Tensor:
        """[1, 1, 1, D*KD, D_out]: 1 where tap kd of input depth i lands on output depth o."""
        d_out = (d - 1) * self.stride_d - 2 * self.padding_d + self.kd + self.output_padding_d
        rows = []
        for i in range(d):
            for k in range(self.kd):
                o = i * self.stride_d + k - self.padding_d
                rows.append([1.0 if j == o else 0.0 for j in range(d_out)])
        return torch.tensor(rows, dtype=like.dtype, device=like.device).reshape(1, 1, 1, d * self.kd, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (4, 5):
            raise ValueError(f"expected a 4-D (unbatched) or 5-D input, got {x.dim()}-D")
        unbatched = x.dim() == 4
        if unbatched:
            x = x.unsqueeze(0)
        n, c, d, h, w = x.shape
        d = int(d)  # the matrix is a constant for this depth
        # [N, C_in, D, H, W] -> [N*D, C_in, H, W]: each depth slice is an independent 2-D image.
        y = self.conv(x.transpose(1, 2).reshape(n * d, c, h, w))
        h_out, w_out = y.shape[-2], y.shape[-1]
        # [N*D, C_out*KD, H', W'] -> [N, C_out, H', W', D*KD]: each output column's taps last.
        y = y.reshape(n, d, self.out_channels, self.kd, h_out, w_out).permute(0, 2, 4, 5, 1, 3)
        y = y.reshape(n, self.out_channels, h_out, w_out, d * self.kd)
        # Each tap into its output depth, then [N, C_out, D_out, H', W'].
        y = torch.matmul(y, self.taps(d, y)).permute(0, 1, 4, 2, 3)
        if self.bias is not None:
            y = y + self.bias.view(-1, 1, 1, 1)
        return y.squeeze(0) if unbatched else y
)PY";

namespace {

// What apply_bpu_lint_fixes runs: the paths come from ONNX node names, so they are resolved
// against the live model (torch.onnx's call-count suffixes, uncalled containers) and checked
// against the exported layer's parameters before anything is swapped.
const char* const kApplyHelpersSource = R"PY(def _bpu_lint_path_candidates(path):
    """The module paths an exported node's scope can stand for, the literal one first.

    torch.onnx appends _1, _2, ... to the scope of a module it has already seen (a layer called
    twice is "shared", then "shared_1"), but an attribute may really be named up_1: so both are
    tried, against the live model, the last atom's suffix dropped first.
    """
    options = []
    for atom in path.split("."):
        base, sep, count = atom.rpartition("_")
        options.append([atom, base] if sep and base and count.isdigit() else [atom])
    paths = [([], 0)]
    for choices in options:
        paths = [(p + [c], dropped + (c != choices[0])) for p, dropped in paths for c in choices]
    paths.sort(key=lambda pd: pd[1])  # stable: of one suffix dropped, the last atom's first
    return [".".join(p) for p, _ in paths]


def _bpu_lint_submodule(model, path):
    module = model
    for atom in path.split("."):
        module = module._modules.get(atom) if isinstance(module, nn.Module) else None
        if module is None:
            return None
    return module


def _bpu_lint_mismatch(module, cls, exported):
    """Why module is not the exported layer; None when it is (or is already cls's replacement)."""
    if isinstance(module, cls):
        return None
    if not isinstance(module, nn.ConvTranspose3d):
        return f"is {type(module).__name__}, not nn.ConvTranspose3d"
    # The replacements compute the float layer: whatever else runs around or inside it would be
    # dropped (a QAT layer fake-quantising its weight in forward(), a parametrized weight, the
    # hooks torch.ao.quantization's prepare_qat adds), so the outputs would differ. Refused.
    if type(module).forward is not nn.ConvTranspose3d.forward:
        return (f"is {type(module).__name__}, derived from nn.ConvTranspose3d with its own forward() (a QAT layer "
                "fake-quantising its weight, say), which the replacement would not run")
    if getattr(module, "parametrizations", None):
        return "has parametrized tensors (" + ", ".join(module.parametrizations.keys()) + "), which the replacement would not keep"
    if module._forward_hooks or module._forward_pre_hooks:
        return "has forward hooks (fake quant or observers, say), which the replacement would not run"
    found = dict(in_channels=module.in_channels, out_channels=module.out_channels,
                 kernel_size=tuple(module.kernel_size), stride=tuple(module.stride),
                 padding=tuple(module.padding), output_padding=tuple(module.output_padding),
                 dilation=tuple(module.dilation), groups=module.groups, bias=module.bias is not None)
    differ = [f"{k} {found[k]} != exported {v}" for k, v in exported.items() if found[k] != v]
    return ", ".join(differ) or None


def _bpu_lint_resolve(model, path, cls, exported):
    """The one submodule that path (from an ONNX node name) stands for, and None; else None, why."""
    tried = []
    candidates = _bpu_lint_path_candidates(path)
    for candidate in candidates:
        module = _bpu_lint_submodule(model, candidate)
        why = "no such submodule" if module is None else _bpu_lint_mismatch(module, cls, exported)
        if why is None:
            return module, None
        tried.append(f"{candidate}: {why}")
    # A container that forward() never calls (a ModuleDict holding the layer) leaves no scope in
    # the node name: accept a submodule whose name ends in the path if it is the only one that
    # matches the exported layer.
    for candidate in candidates:
        found = {id(m): (name, m) for name, m in model.named_modules()
                 if name.endswith("." + candidate) and _bpu_lint_mismatch(m, cls, exported) is None}
        if len(found) == 1:
            return next(iter(found.values()))[1], None
        if found:
            tried.append(f"*.{candidate}: ambiguous (" + ", ".join(sorted(n for n, _ in found.values())) + ")")
            break
    return None, "; ".join(tried)


def _bpu_lint_swap(model, layers, not_replaced=()):
    """Replaces every layer or none: all paths are resolved and all replacements built first.
    not_replaced: (layer, why) of the flagged layers bpu-lint wrote no replacement for, warned of."""
    originals = {}  # id -> (first path, module, cls): a module called N times is replaced once
    unresolved = []
    for path, cls, exported in layers:
        module, why = _bpu_lint_resolve(model, path, cls, exported)
        if module is None:
            unresolved.append(f"{path} ({why})")
        elif not isinstance(module, cls):
            originals.setdefault(id(module), (path, module, cls))
    if unresolved:
        raise LookupError("apply_bpu_lint_fixes: model left unchanged; no nn.ConvTranspose3d matching the "
                          "exported layer at " + "; ".join(unresolved))
    replacements = {}
    for key, (path, module, cls) in originals.items():
        try:
            replacements[key] = cls(module)
        except ValueError as e:
            raise ValueError(f"apply_bpu_lint_fixes: model left unchanged; {path}: {e}") from e
    # Every reference is swapped, so a module registered under two names stays shared.
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if child is not None and id(child) in replacements:
                setattr(parent, name, replacements[id(child)])
    if not_replaced:
        warnings.warn(f"apply_bpu_lint_fixes: {len(not_replaced)} flagged layer(s) not replaced, still in the "
                      "model: " + "; ".join(f"{layer}: {why}" for layer, why in not_replaced), stacklevel=3)
    return model
)PY";

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

// The 3-D parameters with every attribute present, so formatting never indexes
// past a vector a caller left empty. ONNX defaults: stride 1, pad 0, dilation 1.
struct Params3d {
  int64_t c_in = 0, c_out = 0, group = 1;
  bool has_bias = false;
  int64_t kernel[3] = {0, 0, 0};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t output_padding[3] = {0, 0, 0};
  std::vector<int64_t> input_shape;
};

bool resolve(const ConvTransposeParams& p, Params3d& out) {
  if (p.kernel.size() != 3) return false;
  out.c_in = p.c_in;
  out.c_out = p.c_out;
  out.group = p.group;
  out.has_bias = p.has_bias;
  out.input_shape = p.input_shape;
  for (size_t i = 0; i < 3; ++i) {
    out.kernel[i] = p.kernel[i];
    if (p.strides.size() == 3) out.stride[i] = p.strides[i];
    if (p.dilations.size() == 3) out.dilation[i] = p.dilations[i];
    if (p.output_padding.size() == 3) out.output_padding[i] = p.output_padding[i];
    if (p.pads.size() == 6) {
      out.pad_begin[i] = p.pads[i];
      out.pad_end[i] = p.pads[i + 3];
    }
  }
  return true;
}

std::string tuple3(const int64_t (&v)[3]) {
  std::ostringstream os;
  os << "(" << v[0] << ", " << v[1] << ", " << v[2] << ")";
  return os.str();
}

// PyTorch pads symmetrically and crops output_padding's extra rows from the
// end. An ONNX axis (begin b, end e, output_padding op) keeps the window that
// starts b into the full transposed-conv result and is `out` long, so it equals
// PyTorch padding=b with output_padding = op + (b - e) -- as long as that is
// not negative and PyTorch accepts it (output_padding < max(stride, dilation)).
struct TorchPadding {
  int64_t padding[3] = {0, 0, 0};
  int64_t output_padding[3] = {0, 0, 0};
  bool asymmetric = false;  // the ONNX pads differ between begin and end somewhere
  bool exact = true;        // the torch values reproduce the ONNX layer exactly
};

TorchPadding torch_padding(const Params3d& p) {
  TorchPadding t;
  for (int i = 0; i < 3; ++i) {
    const int64_t b = p.pad_begin[i], e = p.pad_end[i], op = p.output_padding[i];
    t.padding[i] = b;
    t.output_padding[i] = op;
    if (b != e) t.asymmetric = true;
    const int64_t merged = op + (b - e);
    if (b >= 0 && merged >= 0 && merged < std::max(p.stride[i], p.dilation[i])) {
      t.output_padding[i] = merged;
    } else {
      t.exact = false;  // keep padding = begins, output_padding = op: the closest torch layer
    }
  }
  return t;
}

// The class's preconditions, checked on the ONNX parameters so that a snippet
// can warn instead of leaving the user to find the ValueError at run time.
std::vector<std::string> precondition_problems(const FixKind& f, const Params3d& p) {
  static const char* const kAxis[3] = {"D", "H", "W"};
  std::vector<std::string> problems;
  if (f.torch_preconditions == TorchPreconditions::UndilatedD) {
    if (p.dilation[0] != 1) problems.push_back("dilation D != 1");
    return problems;
  }
  const int axes = f.torch_preconditions == TorchPreconditions::NonOverlappingAll ? 3 : 1;
  for (int i = 0; i < axes; ++i) {
    const std::string a = kAxis[i];
    if (p.stride[i] != p.kernel[i]) problems.push_back("stride " + a + " != kernel " + a);
    if (p.pad_begin[i] != 0 || p.pad_end[i] != 0) problems.push_back("pads " + a + " != 0");
    if (p.output_padding[i] != 0) problems.push_back("output_padding " + a + " != 0");
    if (p.dilation[i] != 1) problems.push_back("dilation " + a + " != 1");
  }
  return problems;
}

// ---------------------------------------------------------------------------
// Module paths
// ---------------------------------------------------------------------------

bool is_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The characters allowed in a path atom. Deliberately narrow: the atom is
// written into Python code and comments, so quotes, backslashes, '#',
// whitespace and newlines from a crafted ONNX node name must never get there.
bool is_atom_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool is_atom(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_atom_char); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

// Text from the model for a Python comment: printable ASCII only, so a
// newline (or anything else) in a node name cannot end the comment.
std::string comment_text(const std::string& text) {
  std::string out;
  for (char c : text) out += c >= 0x20 && c < 0x7f ? c : '?';
  return out;
}

// A Python string literal of model text: printable ASCII (comment_text), with the
// backslash and the double quote escaped, so it cannot end the literal.
std::string python_string(const std::string& text) {
  std::string out = "\"";
  for (char c : comment_text(text)) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool is_module_path(const std::string& path) {
  if (path.empty()) return false;
  for (const auto& atom : split(path, '.')) {
    if (!is_atom(atom)) return false;
  }
  return true;
}

// Strips the "_N" torch.onnx appends to a numeric atom of a module called more
// than once ("0_1" -> "0"). Non-numeric atoms are left alone: "conv_1" may be a
// real attribute or conv's second call, which only the live model can tell
// (the snippet's _bpu_lint_resolve tries both).
std::string strip_numeric_dedup(const std::string& atom) {
  const size_t us = atom.find('_');
  if (us == std::string::npos) return atom;
  if (is_digits(atom.substr(0, us)) && is_digits(atom.substr(us + 1))) return atom.substr(0, us);
  return atom;
}

// torch.onnx's _unqualified_variable_name: the atoms from the last non-numeric one on.
std::string unqualified(const std::vector<std::string>& atoms) {
  size_t start = 0;
  for (size_t i = atoms.size(); i-- > 0;) {
    if (!is_digits(atoms[i])) {
      start = i;
      break;
    }
  }
  std::vector<std::string> tail(atoms.begin() + static_cast<std::ptrdiff_t>(start), atoms.end());
  return join(tail, ".");
}

// ---------------------------------------------------------------------------
// Snippet text
// ---------------------------------------------------------------------------

std::string params_comment(const std::string& label, const Params3d& p, const TorchPadding& t) {
  std::ostringstream os;
  os << "    # " << label << ": C_in=" << p.c_in << ", C_out=" << p.c_out << ", kernel=" << tuple3(p.kernel)
     << ", stride=" << tuple3(p.stride) << ", padding=" << tuple3(t.padding)
     << ", output_padding=" << tuple3(t.output_padding) << ", dilation=" << tuple3(p.dilation)
     << ", groups=" << p.group << ", bias=" << (p.has_bias ? "True" : "False");
  if (p.input_shape.size() == 5) {
    os << ", input=(";
    for (size_t i = 0; i < 5; ++i) {
      if (i) os << ", ";
      if (p.input_shape[i] >= 0)
        os << p.input_shape[i];
      else
        os << (i == 0 ? "N" : "?");
    }
    os << ")";
  }
  os << "\n";
  return os.str();
}

std::string constructor_call(const Params3d& p, const TorchPadding& t) {
  std::ostringstream os;
  os << "nn.ConvTranspose3d(" << p.c_in << ", " << p.c_out << ", kernel_size=" << tuple3(p.kernel)
     << ", stride=" << tuple3(p.stride) << ", padding=" << tuple3(t.padding)
     << ", output_padding=" << tuple3(t.output_padding) << ", groups=" << p.group
     << ", bias=" << (p.has_bias ? "True" : "False") << ", dilation=" << tuple3(p.dilation) << ")";
  return os.str();
}

// The exported layer's parameters as the nn.ConvTranspose3d attributes that
// apply_bpu_lint_fixes compares; padding only where PyTorch can express it.
std::string exported_params(const Params3d& p, const TorchPadding& t) {
  std::ostringstream os;
  os << "dict(in_channels=" << p.c_in << ", out_channels=" << p.c_out << ", kernel_size=" << tuple3(p.kernel)
     << ", stride=" << tuple3(p.stride);
  if (t.exact) os << ", padding=" << tuple3(t.padding) << ", output_padding=" << tuple3(t.output_padding);
  os << ", dilation=" << tuple3(p.dilation) << ", groups=" << p.group << ", bias=" << (p.has_bias ? "True" : "False")
     << ")";
  return os.str();
}

// `layers.append(("<path>", <Class>, dict(...)))`: the path is a validated module
// path (is_module_path), so it is safe inside the string literal.
std::string layer_entry(const FixKind& f, const Params3d& p, const std::string& path) {
  return "layers.append((\"" + path + "\", " + f.torch_class + ", " + exported_params(p, torch_padding(p)) + "))";
}

std::string usage_block(const FixKind& f, const Params3d& p, const std::string& path) {
  const std::string label = path.empty() ? "(unknown module path)" : path;
  const TorchPadding t = torch_padding(p);
  std::string out = params_comment(label, p, t);
  if (t.asymmetric || !t.exact) {
    out += "    # note: the ONNX pads are begins " + tuple3(p.pad_begin) + ", ends " + tuple3(p.pad_end) +
           " with output_padding " + tuple3(p.output_padding) + "; nn.ConvTranspose3d pads symmetrically.\n";
    if (t.exact)
      out += "    # The padding/output_padding below reproduce them exactly.\n";
    else
      out += "    # PyTorch cannot express them (it needs begins >= ends and output_padding + begins - ends < "
             "max(stride, dilation)):\n    # the constructor below (padding = begins) is NOT an exact match.\n";
  }
  const std::vector<std::string> problems = precondition_problems(f, p);
  if (!problems.empty()) {
    out += "    # WARNING: preconditions not met for " + std::string(f.torch_class) + " (" + join(problems, ", ") +
           "); its constructor will raise ValueError.\n";
  }
  out += "    # " + label + ": " + constructor_call(p, t) + "\n";
  if (path.empty()) {
    out += "    # Set the layer's attribute path (the ONNX node name did not reveal it), then uncomment:\n";
    out += "    # " + layer_entry(f, p, "<path.to.layer>") + "\n";
  } else {
    out += "    " + layer_entry(f, p, path) + "\n";
  }
  return out;
}

constexpr const char* kHeader =
    "# Generated by bpu-lint: PyTorch-side replacements for ConvTranspose3d layers that the Horizon BPU\n"
    "# cannot run. Each replacement module is built from the original nn.ConvTranspose3d (its weights are\n"
    "# copied), checks that the layer meets its preconditions (ValueError otherwise) and computes the\n"
    "# same output; exported to ONNX it yields the BPU-friendly ops of the matching bpu-lint fix.\n"
    "# Usage: load the trained weights, call apply_bpu_lint_fixes(model), then export as before.\n"
    "import warnings\n"
    "\n"
    "import torch\n"
    "from torch import nn\n";

constexpr const char* kApplyDoc =
    "    \"\"\"Replaces, in place, each ConvTranspose3d bpu-lint reported. Call after loading the weights.\n"
    "\n"
    "    All or nothing: every path (from the ONNX node names) is resolved against this model and every\n"
    "    replacement built before any is swapped in. A path that matches no nn.ConvTranspose3d with the\n"
    "    exported parameters raises LookupError naming it, a layer that breaks its class's preconditions\n"
    "    raises ValueError; either way the model is left unchanged. A layer forward() calls several times\n"
    "    (exported as \"up\", \"up_1\", ...) is replaced once, wherever it is registered. A layer that\n"
    "    does more than nn.ConvTranspose3d (a layer derived from it with its own forward(), a QAT layer that\n"
    "    fake-quantises its weight; a parametrized weight; forward hooks) does not match: the replacement\n"
    "    would drop that. Flagged layers bpu-lint wrote no replacement for are named in a warning.\n"
    "    \"\"\"\n";

}  // namespace

std::string pytorch_module_source(const std::string& fix_id) {
  const FixKind* f = find_fix_kind(fix_id);
  return f ? f->torch_source : "";
}

std::string pytorch_module_class(const std::string& fix_id) {
  const FixKind* f = find_fix_kind(fix_id);
  return f ? f->torch_class : "";
}

std::string pytorch_snippet_file(const std::vector<SnippetLayer>& layers) {
  // Classes in catalog order, each once, whatever order the layers come in.
  std::string classes;
  for (const auto& f : fix_catalog()) {
    const bool used = std::any_of(layers.begin(), layers.end(), [&](const SnippetLayer& l) {
      return l.fix_id == f.id && l.params.kernel.size() == 3;
    });
    if (used) classes += std::string("\n\n") + f.torch_source;
  }

  std::string body;
  std::set<std::string> entries;
  for (const auto& layer : layers) {
    // A path that is not a clean module path is treated as unknown: it would
    // otherwise be written into code verbatim.
    const std::string path = is_module_path(layer.torch_path) ? layer.torch_path : "";
    const std::string label = path.empty() ? "(unknown module path)" : path;
    body += "\n";
    if (!layer.not_replaced.empty()) {
      body += "    # " + label + " (ONNX node '" + comment_text(layer.onnx_name) +
              "'): not replaced: " + comment_text(layer.not_replaced) + "\n";
      body += "    not_replaced.append((" + python_string(label + " (ONNX node '" + layer.onnx_name + "')") + ", " +
              python_string(layer.not_replaced) + "))\n";
      continue;
    }
    const FixKind* f = find_fix_kind(layer.fix_id);
    Params3d p;
    if (!f) {
      // The id itself is not echoed: only catalog ids are known to be safe text.
      body += "    # " + label + ": unknown fix id; no PyTorch replacement generated.\n";
      continue;
    }
    if (!resolve(layer.params, p)) {
      body += "    # " + label + ": not a 3-D ConvTranspose (kernel rank " +
              std::to_string(layer.params.kernel.size()) + "); no PyTorch replacement generated.\n";
      continue;
    }
    // The same path with other parameters stays: it may be a real attribute "up_1" beside
    // the second call of "up", which apply_bpu_lint_fixes tells apart by the parameters.
    if (!path.empty() && !entries.insert(layer_entry(*f, p, path)).second) {
      body += "    # " + label + ": already listed above.\n";
      continue;
    }
    body += usage_block(*f, p, path);
  }

  std::string out = kHeader;
  out += classes;
  out += "\n\n";
  out += kApplyHelpersSource;
  out += "\n\n";
  out += "def apply_bpu_lint_fixes(model: nn.Module) -> nn.Module:\n";
  out += kApplyDoc;
  out += "    layers = []  # (module path from the ONNX node name, replacement class, the exported layer)\n";
  out += "    not_replaced = []  # (flagged layer, why bpu-lint wrote no replacement): warned of\n";
  out += body;
  out += "    return _bpu_lint_swap(model, layers, not_replaced)\n";
  return out;
}

std::string pytorch_snippet(const std::string& fix_id, const ConvTransposeParams& p, const std::string& torch_path) {
  if (!find_fix_kind(fix_id) || p.kernel.size() != 3) return "";
  return pytorch_snippet_file({SnippetLayer{fix_id, p, torch_path}});
}

std::string torch_module_path(const std::string& onnx_node_name) {
  if (onnx_node_name.size() < 2 || onnx_node_name[0] != '/') return "";
  const std::vector<std::string> segments = split(onnx_node_name.substr(1), '/');
  // At least one scope plus the op name ("ConvTranspose", "ConvTranspose_1").
  if (segments.size() < 2 || segments.back().empty()) return "";

  std::vector<std::string> full;  // atoms of the path so far
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    std::vector<std::string> atoms = split(segments[i], '.');
    for (auto& a : atoms) {
      if (!is_atom(a)) return "";
    }
    atoms.back() = strip_numeric_dedup(atoms.back());
    // A scope that starts with its parent's unqualified name plus '.' is the
    // parent plus numeric children (nn.Sequential / nn.ModuleList entries):
    // "deblock_seg_v2" then "deblock_seg_v2.0" is one level deeper, not two.
    const std::vector<std::string> parent_unq = split(unqualified(full), '.');
    const bool extends_parent = !full.empty() && atoms.size() > parent_unq.size() &&
                                std::equal(parent_unq.begin(), parent_unq.end(), atoms.begin());
    const size_t skip = extends_parent ? parent_unq.size() : 0;
    full.insert(full.end(), atoms.begin() + static_cast<std::ptrdiff_t>(skip), atoms.end());
  }
  return join(full, ".");
}

}  // namespace bpulint
