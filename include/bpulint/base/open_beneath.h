// Opening a file a model names relative to its folder (ONNX external data) so
// that no path, symlink or race leads out of that folder: the check is the
// open itself, and whoever reads the bytes reads from that descriptor.
#pragma once

#include <string>

namespace bpulint {

// Opens `relative` (a relative path without "..", as the caller has checked)
// beneath `folder` for reading (O_RDONLY | O_CLOEXEC | O_NONBLOCK), refusing to
// leave `folder`: openat2 with RESOLVE_BENEATH where the kernel has it (a
// symlink that stays inside is followed), otherwise one openat per component
// with O_NOFOLLOW (no symlink at all). Returns the descriptor, or -1 with
// `err` the errno: EXDEV or ELOOP when the path leads out of the folder.
int open_beneath(const std::string& folder, const std::string& relative, int& err);

}  // namespace bpulint
