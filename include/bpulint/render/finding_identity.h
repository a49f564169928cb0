// What names a finding from one run to the next, for the formats whose
// consumers match findings across runs: SARIF's partialFingerprints (GitHub
// code scanning) and GitLab Code Quality's fingerprint (the merge-request
// widget's new/fixed). Built from the rule, the node's identity and op type,
// never from display names, byte offsets or messages (which hold counts).
#pragma once

#include <cstdint>
#include <string>

namespace bpulint {

struct Diagnostic;
struct ModelReport;

// `path` relative to the absolute folder `root`, normalised and '/'-separated
// ("./a//m.onnx" and "../x/m.onnx" from a subfolder name the same file the
// same way); "" when it is outside `root` or `root` is "".
std::string path_under_root(const std::string& path, const std::string& root);

// "BPU1101:<node identity>:ConvTranspose" for a node finding;
// "BPU9005:(model):<model_path>:<input>" for a model-level one (the input a
// root-cause note is about). `model_path` should be stable across checkouts
// (path_under_root's, when under the repository).
std::string finding_key(const ModelReport& report, const Diagnostic& d, const std::string& model_path);

// A short hash of a key: 16 hex digits (FNV-1a, 64 bits).
std::string fingerprint_hash(const std::string& key);

}  // namespace bpulint
