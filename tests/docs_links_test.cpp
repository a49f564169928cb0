// The README and the manual keep working: every relative link (file and
// #anchor) of README.md, CONTRIBUTING.md, docs/ and bench/ resolves, and every
// bpu-lint command they show runs with the exit code and the output shown.
//
// Commands: in README.md, each line of a shell or plain fenced block that
// starts with `bpu-lint` (or `$ bpu-lint`); in the other pages, the `$ bpu-lint`
// lines of transcripts. They run with the build's binary as `bpu-lint` on PATH,
// in a scratch folder holding a copy of examples/ (so --fix and -o write there)
// and the repository's tests/ (read only). An HTML comment on the line before
// the fence says what to expect:
//   <!-- readme-test: exit 1 -->          the exit code (default 0)
//   <!-- readme-test: skip (why) -->      not run (placeholders, a network)
// A transcript's output lines must be what the command prints (stdout then
// stderr as they interleave); a line "..." skips any lines, and "..." inside a
// line skips any text.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <sys/wait.h>

#include "test_util.h"

using namespace bpulint::test;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = BPULINT_SOURCE_DIR;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The pages the test covers, relative to the repository root.
std::vector<std::string> pages() {
  std::vector<std::string> out = {"README.md", "CONTRIBUTING.md", "bench/README.md"};
  if (fs::exists(kRoot + "/bench/HISTORY.md")) out.push_back("bench/HISTORY.md");
  for (const auto& e : fs::directory_iterator(kRoot + "/docs")) {
    if (e.path().extension() == ".md") out.push_back("docs/" + e.path().filename().string());
  }
  std::sort(out.begin() + 1, out.end());
  return out;
}

struct Fence {
  std::string lang;
  std::string marker;  // the readme-test comment before it, if any
  std::vector<std::string> lines;
  int line = 0;  // the opening fence's line, 1-based
};

struct Page {
  std::vector<std::string> prose;  // lines outside fences ("" for fenced ones, so numbers stay)
  std::vector<Fence> fences;
};

Page parse_page(const std::string& text) {
  Page page;
  const auto lines = lines_of(text);
  std::string last_nonblank;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string trimmed = lines[i];
    trimmed.erase(0, trimmed.find_first_not_of(' '));
    if (!starts_with(trimmed, "```")) {
      page.prose.push_back(lines[i]);
      if (!trimmed.empty()) last_nonblank = trimmed;
      continue;
    }
    Fence f;
    f.lang = trimmed.substr(3);
    f.line = static_cast<int>(i) + 1;
    if (starts_with(last_nonblank, "<!-- readme-test:")) f.marker = last_nonblank;
    const size_t indent = lines[i].size() - trimmed.size();
    page.prose.push_back("");
    for (++i; i < lines.size(); ++i) {
      page.prose.push_back("");
      std::string t = lines[i];
      t.erase(0, t.find_first_not_of(' '));
      if (starts_with(t, "```")) break;
      f.lines.push_back(lines[i].size() >= indent ? lines[i].substr(indent) : t);
    }
    page.fences.push_back(f);
    last_nonblank.clear();
  }
  return page;
}

std::string without_code_spans(const std::string& line) {
  return std::regex_replace(line, std::regex("`[^`]*`"), "");
}

// GitHub's heading anchor: lower case, punctuation dropped (letters, digits,
// '-', '_' and non-ASCII kept), spaces to '-'; repeats get -1, -2, ...
std::set<std::string> anchors_of(const Page& page) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  const std::regex heading("^#{1,6} +(.*?) *#* *$");
  const std::regex link("\\[([^\\]]*)\\]\\([^)]*\\)");
  const std::regex html_id("<a +(?:id|name)=\"([^\"]+)\"");
  for (const auto& line : page.prose) {
    std::smatch m;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), html_id); it != std::sregex_iterator(); ++it) {
      out.insert((*it)[1].str());
    }
    if (!std::regex_match(line, m, heading)) continue;
    const std::string text = std::regex_replace(m[1].str(), link, "$1");
    std::string slug;
    for (unsigned char c : text) {
      if (c >= 0x80 || std::isalnum(c) || c == '-' || c == '_') slug += static_cast<char>(std::tolower(c));
      else if (c == ' ') slug += '-';
    }
    const int n = seen[slug]++;
    out.insert(n == 0 ? slug : slug + "-" + std::to_string(n));
  }
  return out;
}

// Whether `actual` is `shown`, where "..." in `shown` stands for any text.
bool line_matches(const std::string& shown, const std::string& actual) {
  if (shown.find("...") == std::string::npos) return shown == actual;
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t at; (at = shown.find("...", from)) != std::string::npos; from = at + 3) parts.push_back(shown.substr(from, at - from));
  parts.push_back(shown.substr(from));
  if (!starts_with(actual, parts.front())) return false;
  size_t pos = parts.front().size();
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    const size_t at = actual.find(parts[i], pos);
    if (at == std::string::npos) return false;
    pos = at + parts[i].size();
  }
  const std::string& last = parts.back();
  return actual.size() >= pos + last.size() && actual.compare(actual.size() - last.size(), last.size(), last) == 0;
}

// Whether `actual` lines are the `shown` lines, a "..." line standing for any lines.
bool output_matches(const std::vector<std::string>& shown, const std::vector<std::string>& actual) {
  std::vector<std::vector<std::string>> segments(1);
  for (const auto& l : shown) {
    if (l == "...") segments.emplace_back();
    else segments.back().push_back(l);
  }
  const bool open_start = !shown.empty() && shown.front() == "...";
  const bool open_end = !shown.empty() && shown.back() == "...";
  auto fits = [&](const std::vector<std::string>& seg, size_t at) {
    if (at + seg.size() > actual.size()) return false;
    for (size_t i = 0; i < seg.size(); ++i) {
      if (!line_matches(seg[i], actual[at + i])) return false;
    }
    return true;
  };
  size_t pos = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    const auto& seg = segments[s];
    if (seg.empty()) continue;
    const bool first = s == 0 && !open_start;
    const bool last = s + 1 == segments.size() && !open_end;
    size_t at = pos;
    if (last && !first) {
      if (actual.size() < seg.size() || actual.size() - seg.size() < pos) return false;
      at = actual.size() - seg.size();
      if (!fits(seg, at)) return false;
    } else if (first) {
      if (!fits(seg, 0)) return false;
      if (last && seg.size() != actual.size()) return false;
      at = 0;
    } else {
      while (at < actual.size() && !fits(seg, at)) ++at;
      if (at >= actual.size()) return false;
    }
    pos = at + seg.size();
  }
  return true;
}

struct ShownCommand {
  std::string where;  // page:line
  std::string command;
  int exit_code = 0;
  bool transcript = false;
  std::vector<std::string> output;
};

std::vector<ShownCommand> shown_commands(const std::string& name, const Page& page) {
  const bool readme = name == "README.md";
  const std::set<std::string> shell = {"", "sh", "bash", "shell", "console"};
  std::vector<ShownCommand> out;
  for (const auto& f : page.fences) {
    if (shell.count(f.lang) == 0) continue;
    if (f.marker.find("readme-test: skip") != std::string::npos) continue;
    int expected = 0;
    std::smatch m;
    if (std::regex_search(f.marker, m, std::regex("readme-test: exit ([0-9]+)"))) expected = std::stoi(m[1].str());
    for (size_t i = 0; i < f.lines.size(); ++i) {
      const std::string& l = f.lines[i];
      const bool prompt = starts_with(l, "$ bpu-lint ");
      if (!prompt && !(readme && starts_with(l, "bpu-lint "))) continue;
      ShownCommand c;
      c.where = name + ":" + std::to_string(f.line + 1 + static_cast<int>(i));
      c.command = prompt ? l.substr(2) : l;
      c.exit_code = expected;
      c.transcript = prompt;
      if (prompt) {
        for (size_t j = i + 1; j < f.lines.size() && !starts_with(f.lines[j], "$ "); ++j) c.output.push_back(f.lines[j]);
      }
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("docs links: every relative link and anchor of README.md, CONTRIBUTING.md, docs and bench resolves") {
  std::map<std::string, std::set<std::string>> anchors;  // by canonical path
  auto anchors_at = [&](const fs::path& p) -> const std::set<std::string>& {
    const std::string key = fs::weakly_canonical(p).string();
    auto it = anchors.find(key);
    if (it == anchors.end()) it = anchors.emplace(key, anchors_of(parse_page(read_file(key)))).first;
    return it->second;
  };
  const std::regex link("\\]\\(([^()\\s]+)(?: +\"[^\"]*\")?\\)");
  int checked = 0;
  for (const auto& name : pages()) {
    const fs::path file = fs::path(kRoot) / name;
    const Page page = parse_page(read_file(file.string()));
    for (size_t n = 0; n < page.prose.size(); ++n) {
      const std::string line = without_code_spans(page.prose[n]);
      for (auto it = std::sregex_iterator(line.begin(), line.end(), link); it != std::sregex_iterator(); ++it) {
        const std::string target = (*it)[1].str();
        if (std::regex_search(target, std::regex("^[a-z][a-z0-9+.-]*:"))) continue;  // a URL
        const size_t hash = target.find('#');
        const std::string path_part = target.substr(0, hash);
        const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
        const fs::path resolved = path_part.empty() ? file : file.parent_path() / path_part;
        INFO(name << ":" << n + 1 << ": " << target);
        ++checked;
        CHECK(fs::exists(resolved));
        if (!anchor.empty() && fs::exists(resolved)) {
          REQUIRE(resolved.extension() == ".md");
          CHECK(anchors_at(resolved).count(anchor) == 1);
        }
      }
    }
  }
  CHECK(checked > 50);  // the pattern still finds the links
}

TEST_CASE("docs commands: every bpu-lint command the README shows, and every transcript in docs, runs as shown") {
  TempDir dir;
  fs::create_directories(dir.path("bin"));
  fs::create_symlink(BPULINT_BINARY, dir.path("bin/bpu-lint"));
  fs::create_directories(dir.path("work"));
  fs::copy(kRoot + "/examples", dir.path("work/examples"), fs::copy_options::recursive);
  fs::create_directory_symlink(kRoot + "/tests", dir.path("work/tests"));

  std::vector<ShownCommand> commands;
  for (const auto& name : pages()) {
    const auto found = shown_commands(name, parse_page(read_file(kRoot + "/" + name)));
    commands.insert(commands.end(), found.begin(), found.end());
  }
  int from_readme = 0;
  for (const auto& c : commands) from_readme += starts_with(c.where, "README.md:");
  CHECK(from_readme >= 4);

  for (const auto& c : commands) {
    INFO(c.where << ": " << c.command);
    const std::string script = "cd " + dir.path("work") + " && PATH=" + dir.path("bin") + ":$PATH " + c.command;
    std::ofstream(dir.path("cmd.sh")) << script << "\n";
    const int status = std::system(("bash " + dir.path("cmd.sh") + " >" + dir.path("out") + " 2>&1 </dev/null").c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string out = read_file(dir.path("out"));
    INFO("printed:\n" << out);
    CHECK(code == c.exit_code);
    if (c.transcript) CHECK(output_matches(c.output, lines_of(out)));
  }
}

TEST_CASE("docs commands: the transcript matcher") {
  const std::vector<std::string> actual = {"a", "b x c", "d", "e"};
  CHECK(output_matches({"a", "b x c", "d", "e"}, actual));
  CHECK(output_matches({"a", "...", "e"}, actual));
  CHECK(output_matches({"a", "b ... c", "..."}, actual));
  CHECK(output_matches({"...", "d", "..."}, actual));
  CHECK_FALSE(output_matches({"a", "...", "d"}, actual));  // the end is anchored
  CHECK_FALSE(output_matches({"b x c", "..."}, actual));   // so is the start
  CHECK_FALSE(output_matches({"a", "b y c", "..."}, actual));
  CHECK_FALSE(output_matches({"a", "b", "d", "e"}, actual));
}
