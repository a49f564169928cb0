#include "bpulint/base/open_beneath.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include <cerrno>

namespace bpulint {
namespace {

constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

int retry_open(int dir, const char* path, int flags) {
  int fd;
  do fd = ::openat(dir, path, flags);
  while (fd < 0 && errno == EINTR);
  return fd;
}

// Without openat2: every component opened with O_NOFOLLOW from the folder's
// descriptor, so no symlink is followed anywhere below it.
int open_by_components(int dir, const std::string& relative) {
  Fd current;  // the sub-folder reached so far (none: `dir` itself)
  size_t start = 0;
  for (;;) {
    const int at = current.fd >= 0 ? current.fd : dir;
    const size_t slash = relative.find('/', start);
    const std::string part = relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (slash == std::string::npos) return retry_open(at, part.c_str(), kReadFlags | O_NOFOLLOW);
    if (!part.empty() && part != ".") {
      const int next = retry_open(at, part.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW);
      if (next < 0) return -1;
      if (current.fd >= 0) ::close(current.fd);
      current.fd = next;
    }
    start = slash + 1;
  }
}

}  // namespace

int open_beneath(const std::string& folder, const std::string& relative, int& err) {
  Fd dir;
  dir.fd = retry_open(AT_FDCWD, folder.empty() ? "." : folder.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (dir.fd < 0) {
    err = errno;
    return -1;
  }
  int fd = -1;
  bool tried = false;
#ifdef SYS_openat2
  open_how how{};
  how.flags = kReadFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  do fd = static_cast<int>(::syscall(SYS_openat2, dir.fd, relative.c_str(), &how, sizeof how));
  while (fd < 0 && errno == EINTR);
  // ENOSYS: a kernel before 5.6; EPERM: a seccomp filter that does not know the call.
  tried = !(fd < 0 && (errno == ENOSYS || errno == EPERM));
#endif
  if (!tried) fd = open_by_components(dir.fd, relative);
  err = fd < 0 ? errno : 0;
  return fd;
}

}  // namespace bpulint
