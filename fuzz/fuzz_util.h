// Shared by the fuzz targets: a private temp folder per process, the built-in
// rule database, and a hard failure that libFuzzer reports as a crash.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "bpulint/model/model_loader.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint::fuzz {

// Strict JSON (UTF-8 strings, paired surrogates), by nlohmann's parser.
inline bool json_valid(const std::string& text, std::string* error) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    return !parsed.is_discarded();
  } catch (const nlohmann::json::exception& e) {
    *error = e.what();
    return false;
  }
}

// Every target parses graphs of two entries or more in two halves, so that
// small inputs exercise the split parse too.
inline const bool split_small_graphs = (set_parse_split_from(2), true);

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "FUZZ INVARIANT BROKEN: %s\n", what.c_str());
  std::abort();
}

#define FUZZ_CHECK(cond, msg)                                         \
  do {                                                                \
    if (!(cond)) ::bpulint::fuzz::die(std::string(#cond) + ": " + (msg)); \
  } while (0)

// One folder per process (mkdtemp), removed at exit.
inline const std::string& temp_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/bpulint-fuzz-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) die("mkdtemp failed");
    static std::string cleanup;
    cleanup = tmpl;
    std::atexit([] { std::system(("rm -rf '" + cleanup + "'").c_str()); });
    return tmpl;
  }();
  return dir;
}

inline void write_bytes(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.good()) die("cannot write " + path);
}

inline const RuleDatabase& builtin_db() {
  static const RuleDatabase db = [] {
    RuleDatabase d;
    std::string error;
    if (!load_default_rule_database("", d, error)) die("built-in rule database: " + error);
    return d;
  }();
  return db;
}

inline const Platform& j6p() {
  const Platform* p = builtin_db().find("j6p");
  if (p == nullptr) die("no j6p platform");
  return *p;
}

}  // namespace bpulint::fuzz
