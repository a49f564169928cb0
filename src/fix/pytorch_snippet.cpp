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

namespace bpulint {





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
  if (f.layer->torch_preconditions == TorchPreconditions::UndilatedD) {
    if (p.dilation[0] != 1) problems.push_back("dilation D != 1");
    return problems;
  }
  const int axes = f.layer->torch_preconditions == TorchPreconditions::NonOverlappingAll ? 3 : 1;
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
  return "layers.append((\"" + path + "\", " + f.layer->torch_class + ", " + exported_params(p, torch_padding(p)) + "))";
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
    out += "    # WARNING: preconditions not met for " + std::string(f.layer->torch_class) + " (" + join(problems, ", ") +
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
  return f != nullptr && f->layer != nullptr ? f->layer->torch_source : "";
}

std::string pytorch_module_class(const std::string& fix_id) {
  const FixKind* f = find_fix_kind(fix_id);
  return f != nullptr && f->layer != nullptr ? f->layer->torch_class : "";
}

std::string pytorch_snippet_file(const std::vector<SnippetLayer>& layers) {
  // Classes in catalog order, each once, whatever order the layers come in.
  std::string classes;
  for (const auto& f : fix_catalog()) {
    const bool used = std::any_of(layers.begin(), layers.end(), [&](const SnippetLayer& l) {
      return l.fix_id == f.id && l.params.kernel.size() == 3;
    });
    if (used && f.layer != nullptr) classes += std::string("\n\n") + f.layer->torch_source;
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
    if (f == nullptr || f->layer == nullptr) {
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
  if (pytorch_module_class(fix_id).empty() || p.kernel.size() != 3) return "";
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
