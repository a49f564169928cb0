#include "bpulint/base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace bpulint {
namespace {

std::string mib(std::uint64_t bytes) {
  const std::uint64_t whole = bytes >> 20;
  return (whole ? std::to_string(whole) : "less than 1") + " MiB";
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

const char* file_kind_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

bool read_input_file(const std::string& path, const InputKind& kind, std::string& text, std::string& error) {
  text.clear();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  // The type check right after refuses it, so the flag never matters for reads.
  Fd f;
  do f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  while (f.fd < 0 && errno == EINTR);
  if (f.fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    error = std::string("cannot read: ") + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = std::string("is ") + file_kind_name(st.st_mode) + ", not a regular file";
    return false;
  }
  if (!note_read(f.fd, path, kind.role, error)) return false;
  const auto too_big = [&] {
    error = "is larger than a " + std::string(kind.what) + " may be (" + mib(kind.max_bytes) + ")";
    return false;
  };
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kind.max_bytes) return too_big();
  try {
    text.resize(static_cast<size_t>(size));
    size_t have = 0;
    for (;;) {
      if (have == text.size()) {
        // The file may have grown since fstat: read on, within the cap.
        if (text.size() >= kind.max_bytes + 1) break;
        text.resize(std::min<std::uint64_t>(kind.max_bytes + 1, text.size() + (64u << 10)));
      }
      const ssize_t n = ::read(f.fd, &text[have], text.size() - have);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error = std::string("cannot read: ") + std::strerror(errno);
        text.clear();
        return false;
      }
      if (n == 0) break;
      have += static_cast<size_t>(n);
    }
    text.resize(have);
  } catch (const std::bad_alloc&) {
    text.clear();
    text.shrink_to_fit();
    error = "not enough memory to read it (" + mib(size) + ")";
    return false;
  }
  if (text.size() > kind.max_bytes) {
    text.clear();
    return too_big();
  }
  return true;
}

}  // namespace bpulint
