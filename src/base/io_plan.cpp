#include "bpulint/base/io_plan.h"

#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

namespace bpulint {
namespace {

struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string real;  // a file not there yet: its folder's real path, '/', its name

  bool same(const FileId& o) const { return exists ? o.exists && dev == o.dev && ino == o.ino : !o.exists && real == o.real; }
};

struct Entry {
  FileId id;
  std::string path, role;
  bool clash_reported = false;  // a write a later read clashed with (its error is said)
};

struct Plan {
  std::mutex mutex;
  bool active = false;
  std::vector<Entry> reads, writes;
};

Plan& plan() {
  static Plan p;
  return p;
}

// False for outputs written in place (devices, FIFOs): nothing is replaced.
bool identify_output(const std::string& path, FileId& id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return false;
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    return true;
  }
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  char* real = ::realpath(folder.c_str(), nullptr);
  id.real = (real != nullptr ? std::string(real) : folder) + "/" + name;
  std::free(real);
  return true;
}

std::string clash(const std::string& path, const std::string& role, const Entry& other) {
  return "is both " + role + " and " + other.role + (other.path == path ? "" : " ('" + other.path + "')") +
         ": bpu-lint never writes a file it reads, nor one file twice";
}

bool baseline_refresh(std::string_view a, std::string_view b) {
  return (a == kBaselineReadRole && b == kBaselineWriteRole) || (a == kBaselineWriteRole && b == kBaselineReadRole);
}

bool note_stat(const struct stat& st, const std::string& path, const std::string& role, std::string& error) {
  FileId id;
  id.exists = true;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  Plan& p = plan();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.active) return true;
  // Noted even when it clashes: the writer's own check then refuses the write too.
  p.reads.push_back({id, path, role});
  for (Entry& e : p.writes) {
    if (e.id.same(id) && !baseline_refresh(e.role, role)) {
      error = clash(path, role, e);
      e.clash_reported = true;
      return false;
    }
  }
  return true;
}

}  // namespace

bool plan_write(const std::string& path, const std::string& role, std::string& error) {
  FileId id;
  if (!identify_output(path, id)) return true;
  Plan& p = plan();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.active) return true;
  for (const auto* list : {&p.reads, &p.writes}) {
    for (const Entry& e : *list) {
      if (e.id.same(id) && !(e.path == path && e.role == role) && !baseline_refresh(e.role, role)) {
        error = clash(path, role, e);
        return false;
      }
    }
  }
  p.writes.push_back({id, path, role});
  return true;
}

bool note_read(int fd, const std::string& path, const std::string& role, std::string& error) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return true;
  return note_stat(st, path, role, error);
}

bool note_read_path(const std::string& path, const std::string& role, std::string& error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return true;  // the read itself will say why
  return note_stat(st, path, role, error);
}

bool write_clash_reported(const std::string& path) {
  FileId id;
  if (!identify_output(path, id)) return false;
  Plan& p = plan();
  std::lock_guard<std::mutex> lock(p.mutex);
  for (const Entry& e : p.writes) {
    if (e.clash_reported && e.id.same(id)) return true;
  }
  return false;
}

bool io_plan_active() {
  Plan& p = plan();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.active;
}

bool write_keeps_reads(dev_t dev, ino_t ino, std::string& error) {
  Plan& p = plan();
  std::lock_guard<std::mutex> lock(p.mutex);
  for (const Entry& e : p.reads) {
    if (e.id.exists && e.id.dev == dev && e.id.ino == ino && e.role != kBaselineReadRole) {
      error = "it is " + e.role + (e.path.empty() ? "" : " ('" + e.path + "')") + ", which this run reads";
      return false;
    }
  }
  return true;
}

void start_io_plan() {
  Plan& p = plan();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.active = true;
  p.reads.clear();
  p.writes.clear();
}

}  // namespace bpulint
