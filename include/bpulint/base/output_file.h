// One policy for every file bpu-lint writes: reports (-o), baselines,
// PyTorch snippets, fixed models and their .data files.
//
//  - "-" is standard output for text. A model is never streamed: the re-lint
//    reads it back and its weights may need a .data file beside it.
//  - An existing character device or FIFO is written in place, never replaced
//    (text only; a model is refused). A FIFO nobody reads is an error at once,
//    never a wait. Block devices, sockets and folders are refused.
//  - A symlink is followed: its target is replaced in the target's folder. A
//    symlink to nothing is refused rather than followed.
//  - A regular file is replaced atomically: an unnamed O_TMPFILE in the same
//    folder, linked in when complete, so even SIGKILL leaves no temp file; where
//    the filesystem has no O_TMPFILE, a named temp file removed on
//    SIGINT/SIGTERM/SIGHUP. The replacement keeps the old permission bits (and
//    owner, when allowed).
//  - The input models are never the output (same inode: symlinks and hard
//    links included).
// Errors are one line naming the file; a failed write leaves the target as it was.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bpulint {

enum class OutputUse { Text, Model };

struct OutputTarget {
  enum class Kind { Stdout, InPlace, Replace };
  Kind kind = Kind::Replace;
  std::string path;     // as the user gave it (for messages)
  std::string file;     // Replace: the regular file to create or replace, symlinks resolved
  bool exists = false;  // Replace: there is a file whose mode and owner the new one keeps
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// What writing `path` means under the policy, or why it is refused. Only
// stats: it opens nothing (a FIFO's reader would see end-of-file), so it can
// check options before any work. `inputs` are the models being read.
bool resolve_output(const std::string& path, OutputUse use, const std::vector<std::string>& inputs,
                    OutputTarget& target, std::string& error);

// Writes a text output (report, baseline, snippet) by the policy.
bool write_output(const std::string& path, const std::string& bytes, const std::vector<std::string>& inputs,
                  std::string& error);

// Defers SIGINT, SIGTERM and SIGHUP while alive, so a commit (one or several
// renames) is all or nothing. SIGKILL cannot be deferred.
class InterruptShield {
 public:
  InterruptShield();
  ~InterruptShield();
  InterruptShield(const InterruptShield&) = delete;
  InterruptShield& operator=(const InterruptShield&) = delete;

 private:
  sigset_t old_;
};

// A temporary file or folder of the run's own (standard input spooled to
// disk) that SIGINT, SIGTERM or SIGHUP must not leave behind: removed by the
// signal handler while this is alive (files before folders). Create the path
// and this under an InterruptShield, so no signal falls between the two; the
// owner removes the path itself on the normal way out.
class TempPathGuard {
 public:
  TempPathGuard() = default;
  TempPathGuard(const std::string& path, bool folder);
  ~TempPathGuard();
  TempPathGuard(const TempPathGuard&) = delete;
  TempPathGuard& operator=(const TempPathGuard&) = delete;

 private:
  int slot_ = -1;
};

// The replacement of one regular file (a Replace target). Until commit()
// nothing is visible at the target; destroyed uncommitted, it leaves nothing.
// Setting BPULINT_NAMED_TEMP_FILES=1 in the environment forces the named-temp
// fallback (a test hook: the tests' filesystem has O_TMPFILE).
class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool open(const OutputTarget& target, std::string& error);
  int fd() const { return fd_; }
  const std::string& file() const { return file_; }
  bool write(const char* data, size_t size, std::string& error);
  // Appends `length` bytes of the file open as `src`, from `offset`: copied by
  // the kernel (copy_file_range) where it can, else read and written in 1 MiB
  // chunks. Never the whole range in memory.
  bool copy_from(int src, uint64_t offset, uint64_t length, std::string& error);
  bool sync(std::string& error);    // fsync: write errors a full disk reports late show here
  bool commit(std::string& error);  // sync, then put the file in place
  // The message for a failed write through fd() (e.g. by a protobuf stream).
  std::string write_error(int err) const;

 private:
  std::string file_, shown_;  // the file replaced; the path as given
  std::string temp_;          // the named temp file ("" for an unnamed one)
  int fd_ = -1;
  int slot_ = -1;             // where temp_ is registered for the signal handler
  bool synced_ = false, committed_ = false;
  uint64_t unsynced_ = 0;     // bytes copied in since writeback was last started
};

}  // namespace bpulint
