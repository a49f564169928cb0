#include "stdin_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace bpulint {

StdinSpool::~StdinSpool() {
  if (!file_.empty()) ::unlink(file_.c_str());
  if (!folder_.empty()) ::rmdir(folder_.c_str());
}

bool StdinSpool::read(std::string& error) {
  if (::isatty(STDIN_FILENO)) {
    error = "standard input is a terminal (pipe a model into it: bpu-lint - < model.onnx)";
    return false;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/bpu-lint-stdin-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  int fd = -1;
  {
    InterruptShield shield;  // no signal between creating each path and registering it
    if (::mkdtemp(buf.data()) == nullptr) {  // mode 0700: the model is no one else's to read
      error = "cannot create a temporary folder for standard input: " + std::string(std::strerror(errno));
      return false;
    }
    folder_ = buf.data();
    folder_guard_ = std::make_unique<TempPathGuard>(folder_, true);
    // Named like a model, so the fixed model's default name and messages read well.
    const std::string file = folder_ + "/stdin.onnx";
    fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      error = "cannot create a temporary file for standard input: " + std::string(std::strerror(errno));
      return false;
    }
    file_ = file;
    file_guard_ = std::make_unique<TempPathGuard>(file_, false);
  }
  std::vector<char> chunk(1 << 20);
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, chunk.data(), chunk.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "cannot read standard input: " + std::string(std::strerror(errno));
      ok = false;
      break;
    }
    for (ssize_t done = 0; ok && done < n;) {
      const ssize_t w = ::write(fd, chunk.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error = "cannot spool standard input: " + std::string(std::strerror(errno));
        ok = false;
      } else {
        done += w;
      }
    }
    if (!ok) break;
  }
  if (::close(fd) != 0 && ok) {
    error = "cannot spool standard input: " + std::string(std::strerror(errno));
    ok = false;
  }
  return ok;
}

}  // namespace bpulint
