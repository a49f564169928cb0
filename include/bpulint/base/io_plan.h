// The files one run reads and writes, by identity (device and inode; a file
// not there yet by its real folder and name), so that whatever names, symlinks
// or hard links reach them, no write replaces a file the run reads and no two
// writes land on one file. Writes are planned before any work is done; reads
// are noted as their files are opened (a model's external data is known only
// once the model is loaded), so a clash is an error (exit 2, both roles
// named) before the clashing output is written. Outputs written in place
// (standard output, character devices, FIFOs) replace nothing and are not
// planned. One exception: --write-baseline may refresh the --baseline it read.
#pragma once

#include <sys/types.h>

#include <string>

namespace bpulint {

// Plans writing `path` as `role` ("the report (-o)"). False, with `error`
// ("is both ROLE and OTHER ...", for the caller to put after the path), when
// a noted read or another planned write is that file.
bool plan_write(const std::string& path, const std::string& role, std::string& error);

// Notes that the run reads the open file `fd` (reached as `path`) as `role`.
// False, with `error` ("is both ROLE and OTHER ...", for the caller to put
// after the path), when it is a planned write.
bool note_read(int fd, const std::string& path, const std::string& role, std::string& error);

// The same for a file the run reads without opening it yet (a model's
// external data, named by the model; a lint never opens it): by stat.
bool note_read_path(const std::string& path, const std::string& role, std::string& error);

// True when the planned write `path` clashed with a read noted later (the
// read's error named both roles): its writer stays silent, so that one clash
// is one line.
bool write_clash_reported(const std::string& path);

// True when a run's plan is active (start_io_plan was called).
bool io_plan_active();

// When the regular file (dev, ino) was noted as read, false with `error`
// ("it is ROLE, which this run reads"): the writers' own check at write time.
bool write_keeps_reads(dev_t dev, ino_t ino, std::string& error);

// Starts a run's plan (the command line does, first thing): forgets every
// earlier plan and read. Until then, planning and noting do nothing, so the
// library used on its own (the tests, many "runs" in one process) keeps no
// state between calls.
void start_io_plan();

// The roles of the two outputs that may be one file: the baseline read and its refresh.
inline constexpr const char* kBaselineReadRole = "the baseline (--baseline)";
inline constexpr const char* kBaselineWriteRole = "the baseline (--write-baseline)";
// The fixed model, planned by the command line (--fixed-model) and again by the writer.
inline constexpr const char* kFixedModelRole = "the fixed model (--fix)";

}  // namespace bpulint
