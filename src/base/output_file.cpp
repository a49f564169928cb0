#include "bpulint/base/output_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <vector>

#include "bpulint/base/input_file.h"
#include "bpulint/base/io_plan.h"

namespace bpulint {
namespace fs = std::filesystem;
namespace {

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string cannot_write(const std::string& path, int err) {
  return "cannot write '" + path + "': " + std::strerror(err != 0 ? err : EIO);
}

bool write_all(int fd, const char* data, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// Named temp files the signal handler removes. A fixed array of lock-free
// atomics: the handler may only do async-signal-safe work (load, unlink).
constexpr int kSlots = 8;
constexpr int kFree = 0, kFilling = 1, kReady = 2;
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");
struct Slot {
  std::atomic<int> state{kFree};
  bool folder = false;  // an (empty once its files are gone) folder: rmdir, after every unlink
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
constexpr int kInterrupts[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_temps_and_reraise(int sig) {
  for (auto& s : g_slots) {
    if (s.state.load() == kReady && !s.folder) unlink(s.path);
  }
  for (auto& s : g_slots) {
    if (s.state.load() == kReady && s.folder) rmdir(s.path);
  }
  signal(sig, SIG_DFL);
  raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

// Once per process, on the first output: a full file-size limit must be an
// EFBIG from write() (reported, target untouched), not a SIGXFSZ core dump;
// and interrupts must remove named temp files. Dispositions the caller set
// (an ignored SIGHUP under nohup, say) are kept.
void prepare_process() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    if (sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGXFSZ, SIG_IGN);
    for (int sig : kInterrupts) {
      if (sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = remove_temps_and_reraise;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(sig, &sa, nullptr);
    }
  });
}

// Call with interrupts deferred, so no signal falls between creating the file and registering it.
int register_temp(const std::string& path, bool folder = false) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kFilling)) {
      g_slots[i].folder = folder;
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(kReady);
      return i;
    }
  }
  return -1;  // more temp files than slots: not expected (a model and its .data file at most)
}

void unregister_temp(int& slot) {
  if (slot >= 0) g_slots[slot].state.store(kFree);
  slot = -1;
}

bool named_temps_forced() {
  const char* v = std::getenv("BPULINT_NAMED_TEMP_FILES");
  return v != nullptr && std::string(v) == "1";
}

std::string proc_fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// A name for linking a finished unnamed temp file in beside an existing target.
std::string fresh_temp_name(const std::string& file) {
  static std::mt19937_64 rng{std::random_device{}()};
  const fs::path p(file);
  return (fs::path(folder_of(file)) / ("." + p.filename().string() + ".tmp-" + std::to_string(rng() % 1000000000)))
      .string();
}

// A file system crash after rename should not lose the new directory entry.
void sync_folder(const std::string& file) {
  const int dir = ::open(folder_of(file).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  if (fsync(dir) != 0) {
    // best effort: the data itself is already on disk
  }
  close(dir);
}

bool write_in_place(const OutputTarget& target, const std::string& bytes, std::string& error) {
  // O_NONBLOCK: opening a FIFO nobody reads fails with ENXIO instead of waiting
  // for a reader; a device that waits for a carrier does not hang either.
  const int fd = ::open(target.path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    error = errno == ENXIO ? "cannot write '" + target.path + "': it is a FIFO and no process is reading it"
                           : cannot_write(target.path, errno);
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {  // replaced since resolve_output
    close(fd);
    error = "cannot write '" + target.path + "': it changed while bpu-lint ran";
    return false;
  }
  // Blocking from here on: the reader (or device) takes the bytes at its pace.
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || !write_all(fd, bytes.data(), bytes.size())) {
    error = cannot_write(target.path, errno);
    close(fd);
    return false;
  }
  if (close(fd) != 0) {
    error = cannot_write(target.path, errno);
    return false;
  }
  return true;
}

}  // namespace

bool resolve_output(const std::string& path, OutputUse use, const std::vector<std::string>& inputs,
                    OutputTarget& target, std::string& error) {
  target = OutputTarget{};
  target.path = path;
  if (path.empty()) {
    error = "empty output path";
    return false;
  }
  if (path == "-") {
    if (use == OutputUse::Model) {
      error = "cannot write a model to standard output ('-'): the re-lint reads it back and its weights may need a "
              ".data file beside it; name a file";
      return false;
    }
    target.kind = OutputTarget::Kind::Stdout;
    return true;
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      error = cannot_write(path, errno);
      return false;
    }
    const std::string dir = folder_of(path);
    struct stat ds {};
    if (stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode)) {
      error = "cannot write '" + path + "': the folder '" + dir + "' does not exist";
      return false;
    }
    target.file = path;
    return true;
  }
  target.file = path;
  if (S_ISLNK(st.st_mode)) {
    // Followed to an existing file only: creating through a dangling link (in
    // a shared folder, say) would write wherever the link's owner chose.
    char* real = realpath(path.c_str(), nullptr);
    if (real == nullptr || stat(real, &st) != 0) {
      error = "refusing to write '" + path + "': it is a symlink that does not lead to a file (" +
              std::strerror(errno) + ")";
      std::free(real);
      return false;
    }
    target.file = real;
    std::free(real);
  }
  for (const auto& in : inputs) {
    struct stat si {};
    if (stat(in.c_str(), &si) == 0 && si.st_dev == st.st_dev && si.st_ino == st.st_ino) {
      error = "refusing to overwrite the input model '" + in + "' (writing '" + path + "')";
      return false;
    }
  }
  if (S_ISREG(st.st_mode)) {
    if (std::string why; !write_keeps_reads(st.st_dev, st.st_ino, why)) {
      error = "refusing to write '" + path + "': " + why;
      return false;
    }
    target.exists = true;
    target.mode = st.st_mode & 0777;
    target.uid = st.st_uid;
    target.gid = st.st_gid;
    return true;
  }
  const bool in_place = S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode);
  if (in_place && use == OutputUse::Text) {
    target.kind = OutputTarget::Kind::InPlace;
    return true;
  }
  error = "refusing to write '" + path + "': it is " + file_kind_name(st.st_mode) +
          (in_place ? " and a model goes only to a regular file (the re-lint reads it back)"
                    : S_ISDIR(st.st_mode) ? "" : "; bpu-lint writes regular files, character devices and FIFOs");
  return false;
}

bool write_output(const std::string& path, const std::string& bytes, const std::vector<std::string>& inputs,
                  std::string& error) {
  OutputTarget target;
  if (!resolve_output(path, OutputUse::Text, inputs, target, error)) return false;
  prepare_process();
  switch (target.kind) {
    case OutputTarget::Kind::Stdout:
      std::cout.flush();  // whatever went through std::cout comes first
      if (!write_all(STDOUT_FILENO, bytes.data(), bytes.size())) {
        error = std::string("cannot write to standard output: ") + std::strerror(errno);
        return false;
      }
      return true;
    case OutputTarget::Kind::InPlace:
      return write_in_place(target, bytes, error);
    case OutputTarget::Kind::Replace:
      break;
  }
  AtomicFile file;
  return file.open(target, error) && file.write(bytes.data(), bytes.size(), error) && file.commit(error);
}

InterruptShield::InterruptShield() {
  sigset_t block;
  sigemptyset(&block);
  for (int sig : kInterrupts) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old_);
}

InterruptShield::~InterruptShield() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);  // an unnamed temp file vanishes with its last descriptor
  if (!committed_ && !temp_.empty()) unlink(temp_.c_str());
  unregister_temp(slot_);
}

bool AtomicFile::open(const OutputTarget& target, std::string& error) {
  prepare_process();
  file_ = target.file;
  shown_ = target.path;
  const std::string dir = folder_of(file_);
#ifdef O_TMPFILE
  if (!named_temps_forced()) {
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);  // 0666 & ~umask, as a new file gets
    // linkat() goes through /proc/self/fd; without /proc fall back to a named file.
    if (fd_ >= 0 && access(proc_fd_path(fd_).c_str(), F_OK) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
#endif
  if (fd_ < 0) {
    temp_ = (fs::path(dir) / ("." + fs::path(file_).filename().string() + ".tmp-XXXXXX")).string();
    InterruptShield shield;
    fd_ = mkostemp(temp_.data(), O_CLOEXEC);
    if (fd_ < 0) {
      error = "cannot create a temporary file in '" + dir + "': " + std::strerror(errno);
      temp_.clear();
      return false;
    }
    slot_ = register_temp(temp_);
    const mode_t mask = umask(0);  // mkstemp makes 0600; a new file gets what the umask allows
    umask(mask);
    if (fchmod(fd_, 0666 & ~mask) != 0) {
      error = cannot_write(shown_, errno);
      return false;
    }
  }
  if (target.exists) {
    // Keep the replaced file's owner where allowed (root, or a group of ours), then its permission bits.
    if (fchown(fd_, target.uid, target.gid) != 0) {
      // not permitted: the file becomes ours, like any file we create
    }
    if (fchmod(fd_, target.mode) != 0) {
      error = cannot_write(shown_, errno);
      return false;
    }
  }
  return true;
}

bool AtomicFile::write(const char* data, size_t size, std::string& error) {
  if (write_all(fd_, data, size)) return true;
  error = cannot_write(shown_, errno);
  return false;
}

std::string AtomicFile::write_error(int err) const { return cannot_write(shown_, err); }

bool AtomicFile::copy_from(int src, uint64_t offset, uint64_t length, std::string& error) {
#ifdef __linux__
  // In-kernel copy: no pass through user memory (and shared extents where the
  // filesystem can). Every 64 MiB the disk is asked to start writing what is
  // there, so the final fsync has little left to wait for (a quarter of a
  // second less per GiB on the bench machine).
  constexpr uint64_t kChunk = uint64_t{64} << 20;
  for (off_t in = static_cast<off_t>(offset); length > 0;) {
    const ssize_t n = ::copy_file_range(src, &in, fd_, nullptr, static_cast<size_t>(std::min(length, kChunk)), 0);
    if (n > 0) {
      length -= static_cast<uint64_t>(n);
      unsynced_ += static_cast<uint64_t>(n);
      if (unsynced_ >= kChunk) {
        ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);  // only a hint: sync() still checks everything
        unsynced_ = 0;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
      offset = static_cast<uint64_t>(in);  // this kernel or filesystem cannot: read and write instead
      break;
    }
    error = n == 0 ? "cannot write '" + shown_ + "': a source file shrank while it was copied" : cannot_write(shown_, errno);
    return false;
  }
  if (length == 0) return true;
#endif
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(length, 1u << 20)));
  while (length > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(length, buffer.size()));
    const ssize_t n = ::pread(src, buffer.data(), chunk, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write '" + shown_ + "': " +
              (n == 0 ? std::string("a source file shrank while it was copied") : "cannot read a source file: " + std::string(std::strerror(errno)));
      return false;
    }
    if (!write(buffer.data(), static_cast<size_t>(n), error)) return false;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  return true;
}

bool AtomicFile::sync(std::string& error) {
  if (synced_) return true;
  if (fsync(fd_) != 0) {
    error = cannot_write(shown_, errno);
    return false;
  }
  synced_ = true;
  return true;
}

bool AtomicFile::commit(std::string& error) {
  if (!sync(error)) return false;
  InterruptShield shield;  // a link and a rename: no interrupt between them
  if (temp_.empty()) {
    const std::string self = proc_fd_path(fd_);
    if (linkat(AT_FDCWD, self.c_str(), AT_FDCWD, file_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno != EEXIST) {
        error = cannot_write(shown_, errno);
        return false;
      }
      // The target exists: link under a fresh name beside it, then rename over it.
      std::string name;
      for (int tries = 0;; ++tries) {
        name = fresh_temp_name(file_);
        if (linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) break;
        if (errno != EEXIST || tries == 100) {
          error = cannot_write(shown_, errno);
          return false;
        }
      }
      if (rename(name.c_str(), file_.c_str()) != 0) {
        error = cannot_write(shown_, errno);
        unlink(name.c_str());
        return false;
      }
    }
  } else if (rename(temp_.c_str(), file_.c_str()) != 0) {
    error = cannot_write(shown_, errno);
    return false;
  }
  committed_ = true;
  unregister_temp(slot_);
  close(fd_);  // after fsync, close has nothing left to lose
  fd_ = -1;
  sync_folder(file_);
  return true;
}

TempPathGuard::TempPathGuard(const std::string& path, bool folder) {
  prepare_process();
  slot_ = register_temp(path, folder);
}

TempPathGuard::~TempPathGuard() { unregister_temp(slot_); }

}  // namespace bpulint
