#include "folder_walk.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>

#include "bpulint/lint/config.h"
#include "bpulint/base/ignore_file.h"
#include "bpulint/base/input_file.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

// Any case: a model.ONNX is a model too.
bool is_onnx_name(const std::string& name) {
  std::string ext = fs::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".onnx";
}

// Folders a walk never enters, as ruff skips them: hidden ones (.git, .venv,
// .cache...) and virtual environments and package trees. A folder named on the
// command line is walked even so.
bool skipped_folder(const std::string& name) {
  return (!name.empty() && name[0] == '.') || name == "node_modules" || name == "venv" || name == "__pypackages__";
}

bool glob_matches(const std::string& glob, const std::string& text) {
  return !text.empty() && ::fnmatch(glob.c_str(), text.c_str(), 0) == 0;
}

// `abs` below `folder` ('/'-separated), or "" when it is not below it.
std::string below(const std::string& abs, const std::string& folder) {
  if (folder == "/") return abs.size() > 1 && abs[0] == '/' ? abs.substr(1) : std::string();
  if (abs.size() <= folder.size() + 1 || abs.compare(0, folder.size(), folder) != 0 || abs[folder.size()] != '/') {
    return {};
  }
  return abs.substr(folder.size() + 1);
}

std::string normal_absolute(const fs::path& p) {
  std::error_code ec;
  std::string s = fs::absolute(p, ec).lexically_normal().generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// One folder's ignore file, and where its patterns are relative to.
struct IgnoreLayer {
  std::string folder;  // absolute, normal
  IgnoreFile file;
};

// .gitignore, then .ignore (which wins over it, as in ripgrep and ruff). One
// that cannot be read is an error line (git warns and goes on; a lint of
// models the file would have left out is not the run the user asked for).
void push_ignore_files(const std::string& folder, std::vector<IgnoreLayer>& layers, std::vector<std::string>& errors) {
  for (const char* name : {".gitignore", ".ignore"}) {
    const fs::path file = fs::path(folder) / name;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) continue;
    std::string text, error;
    if (!read_input_file(file.string(), kIgnoreFile, text, error)) {
      errors.push_back(file.string() + ": error: " + error + " (an ignore file)");
      continue;
    }
    layers.push_back({folder, IgnoreFile::parse(text)});
  }
}

// The deepest ignore file with an opinion decides; within a file, its last matching line.
bool ignored(const std::vector<IgnoreLayer>& layers, const std::string& abs, bool is_dir) {
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    const std::string rel = below(abs, it->folder);
    if (rel.empty()) continue;
    const IgnoreVerdict v = it->file.match(rel, is_dir);
    if (v != IgnoreVerdict::None) return v == IgnoreVerdict::Ignored;
  }
  return false;
}

class Walk {
 public:
  Walk(const WalkOptions& options, std::vector<std::string>& errors) : options_(options), errors_(errors) {}

  // False with `fatal_` when a configuration file cannot be read.
  bool folder(const std::string& input, std::vector<std::string>& found) {
    root_ = normal_absolute(input);
    std::vector<IgnoreLayer> layers;
    ancestor_ignore_files(root_, layers, errors_);
    const Config* config = nullptr;
    if (!options_.config_file.empty()) {
      if (!config_at(options_.config_file, config)) return false;
    } else if (!options_.isolated) {
      const std::string path = find_config((fs::path(input) / "x").string());
      if (!path.empty() && !config_at(path, config)) return false;
    }
    visit(fs::path(input), root_, layers, config, found);
    return fatal_.empty();
  }

  const std::string& fatal() const { return fatal_; }

 private:
  // Ignore files above the walked folder count up to the repository's root
  // (the folder holding .git), as git reads them; outside a repository only
  // the walked folder's own and those below it.
  static void ancestor_ignore_files(const std::string& root, std::vector<IgnoreLayer>& layers,
                                    std::vector<std::string>& errors) {
    std::error_code ec;
    if (fs::exists(fs::path(root) / ".git", ec)) return;  // the walked folder is the root: nothing above counts
    std::vector<std::string> chain;
    for (fs::path dir = fs::path(root).parent_path(); !dir.empty(); dir = dir.parent_path()) {
      chain.push_back(dir.generic_string());
      if (fs::exists(dir / ".git", ec)) {
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) push_ignore_files(*it, layers, errors);
        return;
      }
      if (dir == dir.root_path()) break;
    }
  }

  bool config_at(const std::string& path, const Config*& out) {
    auto it = configs_.find(path);
    if (it == configs_.end()) {
      auto config = std::make_unique<Config>();
      std::string error;
      if (!load_config(path, *config, error)) {
        fatal_ = error;
        return false;
      }
      config->folder = normal_absolute(config->folder);
      it = configs_.emplace(path, std::move(config)).first;
    }
    out = it->second.get();
    return true;
  }

  bool excluded(const std::string& rel_to_root, const std::string& abs, const std::string& name,
                const Config* config) const {
    for (const auto& g : options_.excludes) {
      if (glob_matches(g, rel_to_root) || glob_matches(g, name)) return true;
    }
    if (config == nullptr) return false;
    const std::string rel = below(abs, config->folder);
    for (const auto& g : config->excludes) {
      if (glob_matches(g, rel) || glob_matches(g, name)) return true;
    }
    return false;
  }

  // A folder that cannot be read (permissions, removed meanwhile) is one
  // error line of its own, as git says it; its siblings are still walked.
  void visit(const fs::path& dir, const std::string& abs_dir, std::vector<IgnoreLayer>& layers, const Config* config,
             std::vector<std::string>& found) {
    const size_t layers_before = layers.size();
    push_ignore_files(abs_dir, layers, errors_);
    // A folder's own .bpu-lint.yaml governs what is below it (unless --config or --isolated).
    if (options_.config_file.empty() && !options_.isolated && abs_dir != root_) {
      const fs::path own = fs::path(abs_dir) / kConfigFileName;
      std::error_code own_ec;
      if (fs::is_regular_file(own, own_ec) && !config_at(own.string(), config)) return;
    }
    std::vector<fs::directory_entry> entries;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      entries.push_back(*it);
    }
    if (ec) {
      errors_.push_back(dir.string() + ": error: cannot read the folder: " + ec.message());
      layers.resize(layers_before);
      return;
    }
    for (const auto& entry : entries) {
      const std::string name = entry.path().filename().string();
      const std::string abs = abs_dir == "/" ? "/" + name : abs_dir + "/" + name;
      const std::string rel = below(abs, root_);
      std::error_code e;
      if (entry.is_directory(e) && !entry.is_symlink(e)) {
        if (skipped_folder(name) || excluded(rel, abs, name, config) || ignored(layers, abs, true)) continue;
        visit(entry.path(), abs, layers, config, found);
        if (!fatal_.empty()) return;
        continue;
      }
      if (!is_onnx_name(name) || excluded(rel, abs, name, config) || ignored(layers, abs, false)) continue;
      if (entry.is_symlink(e) && !fs::exists(entry.path(), e)) {
        errors_.push_back(entry.path().string() + ": error: a symlink that leads nowhere (" +
                          fs::read_symlink(entry.path(), e).string() + ")");
        continue;
      }
      if (entry.is_regular_file(e)) found.push_back(entry.path().string());
    }
    layers.resize(layers_before);
  }

  const WalkOptions& options_;
  std::vector<std::string>& errors_;
  std::map<std::string, std::unique_ptr<Config>> configs_;
  std::string root_;
  std::string fatal_;
};

}  // namespace

bool expand_inputs(const std::vector<std::string>& inputs, const WalkOptions& options,
                   std::vector<std::string>& models, std::vector<std::string>& errors, std::string& fatal) {
  Walk walk(options, errors);
  for (const auto& in : inputs) {
    std::error_code ec;
    if (!fs::is_directory(in, ec)) {
      models.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    const size_t errors_before = errors.size();
    if (!walk.folder(in, found)) {
      fatal = walk.fatal();
      return false;
    }
    if (found.empty() && errors.size() == errors_before) errors.push_back(in + ": error: no *.onnx files in the folder");
    std::sort(found.begin(), found.end());
    models.insert(models.end(), found.begin(), found.end());
  }
  return true;
}

}  // namespace bpulint
