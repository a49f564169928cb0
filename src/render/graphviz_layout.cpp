#include "bpulint/render/graphviz_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "bpulint/base/sanitizers.h"

// The dot layout and the core renderers (svg) are linked in as builtins:
// no plugin configuration file (config6) to find, no pango or cairo, and
// text widths from Graphviz's own font metrics (Helvetica ~ Arial), so the
// layout is the same on every machine.
extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
}

// Graphviz 2.42 (Debian 12) leaks in the dot layout of clusters, about 2 KiB
// per cluster and layout (seen with LeakSanitizer on a bare two-node graph
// with one cluster; none without). A report lays out a handful of graphs
// and exits, so the sanitizer builds are told to ignore allocations made
// inside libgvc rather than fail on them.
#if BPULINT_ASAN
extern "C" const char* __lsan_default_suppressions() { return "leak:libgvc.so\n"; }
#endif

namespace bpulint {
namespace {

lt_symlist_t kPlugins[] = {
    {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
    {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
    {nullptr, nullptr},
};

std::mutex& graphviz_mutex() {
  static std::mutex m;
  return m;
}

// Graphviz reports problems through a callback; they are collected instead
// of printed, and the first one becomes the error message.
std::string* g_messages = nullptr;
int collect_message(char* text) {
  if (g_messages != nullptr && text != nullptr) *g_messages += text;
  return 0;
}

// Object ids in creation order. Graphviz's own id discipline makes a named
// object's id the address of its interned name, and the dot layout visits
// clusters in id order: the SVG's cluster order (and the island numbering a
// reader sees first) then followed the heap, which our other threads make
// different from run to run. Named objects get even ids and anonymous ones
// odd ids, as in Graphviz's discipline, because agnameof tells them apart so.
struct CreationOrderIds {
  std::unordered_map<std::string, IDTYPE> ids;
  std::deque<std::string> names;  // names[k] is the name of id 2 * (k + 1)
  IDTYPE next_anonymous = 1;
};

void* ids_open(Agraph_t*, Agdisc_t*) { return new CreationOrderIds; }

long ids_map(void* state, int, char* name, IDTYPE* id, int create) {
  auto& s = *static_cast<CreationOrderIds*>(state);
  if (name == nullptr) {
    *id = s.next_anonymous;
    s.next_anonymous += 2;
    return 1;
  }
  const auto found = s.ids.find(name);
  if (found != s.ids.end()) {
    *id = found->second;
    return 1;
  }
  if (create == 0) return 0;
  s.names.emplace_back(name);
  *id = static_cast<IDTYPE>(2 * s.names.size());
  s.ids.emplace(s.names.back(), *id);
  return 1;
}

long ids_alloc(void*, int, IDTYPE) { return 0; }
void ids_free(void*, int, IDTYPE) {}

char* ids_print(void* state, int, IDTYPE id) {
  auto& s = *static_cast<CreationOrderIds*>(state);
  if (id % 2 != 0 || id == 0 || id / 2 > s.names.size()) return nullptr;
  return &s.names[id / 2 - 1][0];
}

void ids_close(void* state) { delete static_cast<CreationOrderIds*>(state); }
void ids_register(void*, int, void*) {}

Agiddisc_t kCreationOrderIds = {ids_open, ids_map,   ids_alloc,   ids_free,
                                ids_print, ids_close, ids_register};

// Reads the DOT text from memory for agread.
struct DotText {
  const char* next;
  size_t left;
};

int read_dot(void* chan, char* buf, int size) {
  auto& text = *static_cast<DotText*>(chan);
  const size_t n = std::min(text.left, static_cast<size_t>(size));
  std::memcpy(buf, text.next, n);
  text.next += n;
  text.left -= n;
  return static_cast<int>(n);
}

std::string first_line(const std::string& text, const char* fallback) {
  const auto end = text.find('\n');
  const std::string line = text.substr(0, end);
  return line.empty() ? fallback : line;
}

}  // namespace

bool layout_svg(const std::string& dot, std::string& svg, std::string& error) {
  std::lock_guard<std::mutex> lock(graphviz_mutex());
  std::string messages;
  g_messages = &messages;
  struct Restore {
    agusererrf previous;
    ~Restore() {
      agseterrf(previous);
      g_messages = nullptr;
    }
  } restore{agseterrf(collect_message)};

  // A context per call: Graphviz's contexts are cheap next to a layout, and
  // nothing is left behind between reports.
  std::unique_ptr<GVC_t, int (*)(GVC_t*)> gvc(gvContextPlugins(kPlugins, 0), gvFreeContext);
  if (!gvc) {
    error = "cannot start Graphviz";
    return false;
  }
  Agiodisc_t from_memory = AgIoDisc;
  from_memory.afread = read_dot;
  Agdisc_t disc = {&AgMemDisc, &kCreationOrderIds, &from_memory};
  DotText text{dot.data(), dot.size()};
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> graph(agread(&text, &disc), agclose);
  if (!graph) {
    error = "Graphviz cannot read the graph: " + first_line(messages, "syntax error");
    return false;
  }
  // dot's network simplex (ranking and x coordinates) runs until optimal by
  // default, and on wide graphs (detection heads, many CPU islands) that is
  // most of the report's time, growing faster than the graph. A limit of one
  // pass per node bounds it linearly; the layout stays valid, only less
  // compact (bench/README.md, "HTML report layout bound (issue 44)").
  char nslimit[] = "nslimit", nslimit1[] = "nslimit1", one[] = "1", none[] = "";
  agsafeset(graph.get(), nslimit, one, none);
  agsafeset(graph.get(), nslimit1, one, none);
  const int laid_out = gvLayout(gvc.get(), graph.get(), "dot");
  int rendered = -1;
  if (laid_out == 0) {
    char* data = nullptr;
    unsigned int length = 0;
    rendered = gvRenderData(gvc.get(), graph.get(), "svg", &data, &length);
    if (rendered == 0 && data != nullptr) svg.assign(data, length);
    if (data != nullptr) gvFreeRenderData(data);
  }
  gvFreeLayout(gvc.get(), graph.get());
  if (laid_out != 0) {
    error = "Graphviz layout failed: " + first_line(messages, "no detail");
    return false;
  }
  if (rendered != 0) {
    error = "Graphviz could not render SVG: " + first_line(messages, "no detail");
    return false;
  }
  return true;
}

}  // namespace bpulint
