#include "bpulint/model/source_location.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <system_error>

namespace bpulint {
namespace fs = std::filesystem;

namespace {

constexpr int kMetadataPropsField = 9;  // NodeProto.metadata_props (ONNX 1.16+)
constexpr long kMaxLine = 1000000000;

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

// A frame header `File "PATH", line N[, in FUNCTION]`; the path may hold quotes.
bool parse_frame(const std::string& text, StackFrame& frame) {
  static const std::string kFile = "File \"";
  static const std::string kLine = "\", line ";
  if (text.compare(0, kFile.size(), kFile) != 0) return false;
  const size_t end = text.rfind(kLine);
  if (end == std::string::npos || end < kFile.size()) return false;
  size_t k = end + kLine.size();
  long line = 0;
  const size_t digits = k;
  while (k < text.size() && text[k] >= '0' && text[k] <= '9' && line <= kMaxLine) line = line * 10 + (text[k++] - '0');
  if (k == digits || line < 1 || line > kMaxLine) return false;
  frame = StackFrame{};
  frame.file = text.substr(kFile.size(), end - kFile.size());
  frame.line = line;
  static const std::string kIn = ", in ";
  if (text.compare(k, kIn.size(), kIn) == 0) frame.function = text.substr(k + kIn.size());
  return !frame.file.empty();
}

// Python 3.11 marks the failing expression with a line of ^ and ~.
bool is_marker(const std::string& text) { return text.find_first_not_of("^~ ") == std::string::npos; }

// The path's components after any drive letter, '.' and the last '..'; '\' separates too.
std::vector<std::string> path_components(const std::string& path) {
  std::vector<std::string> parts;
  std::string part;
  auto flush = [&] {
    if (part == "..") parts.clear();
    else if (!part.empty() && part != "." && !(parts.empty() && part.size() == 2 && part[1] == ':')) parts.push_back(part);
    part.clear();
  };
  for (char c : path) {
    if (c == '/' || c == '\\') flush();
    else part += c;
  }
  flush();
  return parts;
}

// A frame in an installed package (torch's own module code, say): never the user's line.
bool in_installed_package(const std::vector<std::string>& parts) {
  for (const auto& p : parts) {
    if (p == "site-packages" || p == "dist-packages") return true;
  }
  return false;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> node_metadata(const onnx::NodeProto& node) {
  std::vector<std::pair<std::string, std::string>> out;
  // An ONNX library that knows the field parses it; read it by reflection.
  const auto* field = node.GetDescriptor()->FindFieldByNumber(kMetadataPropsField);
  if (field != nullptr && field->is_repeated() && field->message_type() != nullptr) {
    const auto* reflection = node.GetReflection();
    const int n = reflection->FieldSize(node, field);
    for (int i = 0; i < n; ++i) {
      const auto& entry = reflection->GetRepeatedMessage(node, field, i);
      const auto* key = entry.GetDescriptor()->FindFieldByName("key");
      const auto* value = entry.GetDescriptor()->FindFieldByName("value");
      if (key == nullptr || value == nullptr) continue;
      out.emplace_back(entry.GetReflection()->GetString(entry, key), entry.GetReflection()->GetString(entry, value));
    }
    return out;
  }
  // ONNX 1.12 keeps it as an unknown length-delimited field: a StringStringEntryProto each.
  const google::protobuf::UnknownFieldSet& unknown = node.unknown_fields();
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& f = unknown.field(i);
    if (f.number() != kMetadataPropsField || f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    onnx::StringStringEntryProto entry;
    if (!entry.ParseFromString(f.length_delimited())) continue;
    out.emplace_back(entry.key(), entry.value());
  }
  return out;
}

std::vector<StackFrame> parse_stack_trace(const std::string& text) {
  std::vector<StackFrame> frames;
  bool code_pending = false;  // only the line right after a frame header is its code
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = trim(text.substr(start, end - start));
    start = end + 1;
    StackFrame frame;
    if (parse_frame(line, frame)) {
      frames.push_back(std::move(frame));
      code_pending = true;
    } else {
      const bool code = code_pending && !line.empty() && !is_marker(line) && line.compare(0, 6, "File \"") != 0;
      if (code) frames.back().code = line;
      code_pending = false;
    }
  }
  return frames;
}

SourceResolver::SourceResolver(std::string root) : root_(root.empty() ? "." : std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  prefix_ = root_ == "." ? "" : root_ + "/";
}

std::string SourceResolver::find(const std::string& trace_file) {
  auto cached = found_.find(trace_file);
  if (cached != found_.end()) return cached->second;
  const std::vector<std::string> parts = path_components(trace_file);
  const bool library = in_installed_package(parts);
  std::string result;
  for (size_t i = 0; !library && i < parts.size() && result.empty(); ++i) {
    std::string candidate;
    for (size_t k = i; k < parts.size(); ++k) candidate += (candidate.empty() ? "" : "/") + parts[k];
    std::error_code ec;
    if (fs::is_regular_file(fs::path(root_) / candidate, ec)) result = candidate;
  }
  found_.emplace(trace_file, result);
  return result;
}

bool SourceResolver::locate(const onnx::NodeProto& node, SourceLine& out) {
  std::vector<StackFrame> frames;
  for (const auto& [key, value] : node_metadata(node)) {
    if (key == kTorchStackTraceKey) frames = parse_stack_trace(value);
  }
  if (frames.empty()) return false;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    const std::string found = find(it->file);
    if (found.empty()) continue;
    out = SourceLine{prefix_ + found, it->line, it->function, it->code, it->file};
    return true;
  }
  // None found: the innermost frame outside installed packages names the
  // user's file on the exporting machine.
  const StackFrame* innermost = &frames.back();
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!in_installed_package(path_components(it->file))) {
      innermost = &*it;
      break;
    }
  }
  out = SourceLine{"", innermost->line, innermost->function, innermost->code, innermost->file};
  return true;
}

}  // namespace bpulint
