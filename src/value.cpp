// Value: construction, rendering and structural equality.
#include "bpulint/value.h"

#include <algorithm>
#include <cmath>
#include <locale>
#include <sstream>

namespace bpulint {
namespace {

// Shortest "%g"-style text that parses back to the same double, so 2.5
// prints as "2.5" (not "2.500000") and 0.1 as "0.1". Streams are pinned to
// the classic locale so a host locale with ',' decimals cannot leak in.
std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  auto print = [d](int precision) {
    std::ostringstream out;
    out.imbue(std::locale::classic());
    out.precision(precision);
    out << d;
    return out.str();
  };
  int precision = 1;
  for (; precision < 17; ++precision) {
    std::istringstream in(print(precision));
    in.imbue(std::locale::classic());
    double back = 0;
    in >> back;
    if (back == d) break;
  }
  // Like Python's repr: whole numbers below 1e16 print as 1000, not 1e+03.
  double magnitude = std::fabs(d);
  if (magnitude >= 1 && magnitude < 1e16) {
    precision = std::max(precision, static_cast<int>(std::floor(std::log10(magnitude))) + 1);
  }
  return print(precision);
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  out += '\'';
  return out;
}

// Strings are bare at top level (so templates read naturally:
// "dtype float32") but quoted inside containers, where bare words would be
// ambiguous: ['a, b'] vs ['a', 'b'].
void append(const Value& v, bool nested, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::Unknown: out += '?'; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: out += format_double(v.as_number()); return;
    case Value::Kind::String: out += nested ? quote(v.as_string()) : v.as_string(); return;
    case Value::Kind::List: {
      out += '[';
      const char* sep = "";
      for (const Value& item : v.items()) {
        out += sep;
        append(item, true, out);
        sep = ", ";
      }
      out += ']';
      return;
    }
    case Value::Kind::Record: {
      out += '{';
      const char* sep = "";
      for (const auto& [key, item] : v.fields()) {  // std::map: sorted by key
        out += sep;
        out += key;
        out += ": ";
        append(item, true, out);
        sep = ", ";
      }
      out += '}';
      return;
    }
  }
}

// Exact Int/Float equality: 2 == 2.0, but 2^53 + 1 != 2^53 as a double.
bool int_equals_double(int64_t i, double d) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (!(d >= -kTwo63 && d < kTwo63)) return false;  // also rejects NaN
  if (d != std::trunc(d)) return false;
  return static_cast<int64_t>(d) == i;
}

}  // namespace

Value Value::unknown(std::string reason) {
  Value v;
  v.s_ = std::move(reason);
  return v;
}

Value Value::of_bool(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}

Value Value::of_int(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}

Value Value::of_float(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.f_ = f;
  return v;
}

Value Value::of_string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.s_ = std::move(s);
  return v;
}

Value Value::of_list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::move(items);
  return v;
}

Value Value::of_record(std::map<std::string, Value> fields) {
  Value v;
  v.kind_ = Kind::Record;
  v.fields_ = std::move(fields);
  return v;
}

const Value* Value::field(const std::string& name) const {
  if (kind_ != Kind::Record) return nullptr;
  auto it = fields_.find(name);
  return it == fields_.end() ? nullptr : &it->second;
}

std::string Value::to_string() const {
  std::string out;
  append(*this, false, out);
  return out;
}

bool Value::equals(const Value& other) const {
  if (is_unknown() || other.is_unknown()) return false;
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::Int && other.kind_ == Kind::Int) return i_ == other.i_;
    if (kind_ == Kind::Float && other.kind_ == Kind::Float) return f_ == other.f_;
    return kind_ == Kind::Int ? int_equals_double(i_, other.f_) : int_equals_double(other.i_, f_);
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Bool: return b_ == other.b_;
    case Kind::String: return s_ == other.s_;
    case Kind::List:
      if (list_.size() != other.list_.size()) return false;
      for (size_t i = 0; i < list_.size(); ++i) {
        if (!list_[i].equals(other.list_[i])) return false;
      }
      return true;
    case Kind::Record:
      if (fields_.size() != other.fields_.size()) return false;
      for (auto a = fields_.begin(), b = other.fields_.begin(); a != fields_.end(); ++a, ++b) {
        if (a->first != b->first || !a->second.equals(b->second)) return false;
      }
      return true;
    default: return false;  // numbers and Unknown handled above
  }
}

}  // namespace bpulint
