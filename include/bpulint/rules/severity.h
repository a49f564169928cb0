// The level a finding is reported at; data only (rules, findings and the
// configuration share it).
#pragma once

#include <string>

namespace bpulint {

enum class Severity { Note, Warning, Error };
const char* severity_name(Severity s);
bool parse_severity(const std::string& text, Severity* out);

}  // namespace bpulint
