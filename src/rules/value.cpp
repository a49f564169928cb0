// Value: construction, rendering and structural equality.
#include "bpulint/rules/value.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <locale>
#include <sstream>

namespace bpulint {
namespace {

// Lists and records of the same kind, element by element with `same`:
// the recursion identical() and equals() share.
template <class Same>
bool same_elements(const Value& a, const Value& b, Same same) {
  if (a.kind() == Value::Kind::List) {
    const auto& x = a.items();
    const auto& y = b.items();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!same(x[i], y[i])) return false;
    }
    return true;
  }
  const auto& x = a.fields();
  const auto& y = b.fields();
  if (x.size() != y.size()) return false;
  for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
    if (i->first != j->first || !same(i->second, j->second)) return false;
  }
  return true;
}

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
    case Value::Kind::Unknown: out += dynamic_dim_text(v.dim_name()); return;
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
      for (const auto& [key, item] : v.fields()) {  // sorted by key
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

Value::Value(const Value& other) : kind_(other.kind_), u_(other.u_) {
  switch (kind_) {
    case Kind::Unknown:
    case Kind::String: u_.p = other.u_.p ? new std::string(*other.str()) : nullptr; break;
    case Kind::List: u_.p = new std::vector<Value>(*other.list()); break;
    case Kind::Record: u_.p = new Fields(*other.record()); break;
    default: break;
  }
}

Value& Value::operator=(const Value& other) {
  if (this != &other) *this = Value(other);
  return *this;
}

Value& Value::operator=(Value&& other) noexcept {
  if (this != &other) {
    release();
    kind_ = other.kind_;
    u_ = other.u_;
    other.kind_ = Kind::Unknown;
    other.u_.p = nullptr;
  }
  return *this;
}

void Value::release() {
  switch (kind_) {
    case Kind::Unknown:
    case Kind::String: delete str(); break;
    case Kind::List: delete list(); break;
    case Kind::Record: delete record(); break;
    default: break;
  }
  kind_ = Kind::Unknown;
  u_.p = nullptr;
}

const std::string& Value::as_string() const {
  static const std::string empty;
  return (kind_ == Kind::Unknown || kind_ == Kind::String) && u_.p ? *str() : empty;
}

const std::vector<Value>& Value::items() const {
  static const std::vector<Value> empty;
  return kind_ == Kind::List ? *list() : empty;
}

const Value::Fields& Value::fields() const {
  static const Fields empty;
  return kind_ == Kind::Record ? *record() : empty;
}

// As before values were compact: a non-List has an empty, unused list (and a
// non-Record an unused map) that may be written but is never read back.
std::vector<Value>& Value::items() {
  if (kind_ == Kind::List) return *list();
  thread_local std::vector<Value> scratch;
  scratch.clear();
  return scratch;
}

Value::Fields& Value::fields() {
  if (kind_ == Kind::Record) return *record();
  thread_local Fields scratch;
  scratch.clear();
  return scratch;
}

namespace {
Value::Fields::const_iterator find_field(const Value::Fields& fields, const std::string& name) {
  return std::lower_bound(fields.begin(), fields.end(), name,
                          [](const std::pair<std::string, Value>& f, const std::string& n) { return f.first < n; });
}
}  // namespace

void Value::set(const std::string& name, Value v) {
  if (kind_ != Kind::Record) return;
  Fields& fields = *record();
  auto at = fields.begin() + (find_field(fields, name) - fields.cbegin());
  if (at != fields.end() && at->first == name) at->second = std::move(v);
  else fields.emplace(at, name, std::move(v));
}

Value Value::unknown(std::string reason) {
  Value v;
  if (!reason.empty()) v.u_.p = new std::string(std::move(reason));
  return v;
}

namespace {
const std::string kDimPrefix = "dynamic dim '";
}  // namespace

std::string dynamic_dim_text(const std::string& name) {
  return name.find_first_not_of("0123456789") == std::string::npos ? "?" : name;
}

Value Value::dynamic_dim(const std::string& name) { return unknown(kDimPrefix + name + "'"); }

std::string Value::dim_name() const {
  if (kind_ != Kind::Unknown || str() == nullptr) return "";
  const std::string& r = *str();
  if (r.size() <= kDimPrefix.size() || r.compare(0, kDimPrefix.size(), kDimPrefix) != 0 || r.back() != '\'') return "";
  return r.substr(kDimPrefix.size(), r.size() - kDimPrefix.size() - 1);
}

Value Value::of_bool(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.u_.b = b;
  return v;
}

Value Value::of_int(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.u_.i = i;
  return v;
}

Value Value::of_float(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.u_.f = f;
  return v;
}

Value Value::of_string(std::string s) {
  Value v;
  v.u_.p = new std::string(std::move(s));
  v.kind_ = Kind::String;
  return v;
}

Value Value::of_list(std::vector<Value> items) {
  Value v;
  v.u_.p = new std::vector<Value>(std::move(items));
  v.kind_ = Kind::List;
  return v;
}

Value Value::of_record(std::map<std::string, Value> fields) {
  auto* sorted = new Fields();
  sorted->reserve(std::max<size_t>(fields.size(), 8));  // node records grow to about 8
  for (auto& kv : fields) sorted->emplace_back(kv.first, std::move(kv.second));
  Value v;
  v.u_.p = sorted;
  v.kind_ = Kind::Record;
  return v;
}

const Value* Value::field(const std::string& name) const {
  if (kind_ != Kind::Record) return nullptr;
  auto it = find_field(*record(), name);
  return it == record()->end() || it->first != name ? nullptr : &it->second;
}

std::string Value::to_string() const {
  std::string out;
  append(*this, false, out);
  return out;
}

bool Value::identical(const Value& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Bool: return u_.b == other.u_.b;
    case Kind::Int: return u_.i == other.u_.i;
    case Kind::Float: return std::memcmp(&u_.f, &other.u_.f, sizeof u_.f) == 0;
    case Kind::Unknown:
    case Kind::String: return as_string() == other.as_string();
    case Kind::List:
    case Kind::Record:
      return same_elements(*this, other, [](const Value& x, const Value& y) { return x.identical(y); });
  }
  return false;
}

bool Value::equals(const Value& other) const {
  if (is_unknown() || other.is_unknown()) return false;
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::Int && other.kind_ == Kind::Int) return u_.i == other.u_.i;
    if (kind_ == Kind::Float && other.kind_ == Kind::Float) return u_.f == other.u_.f;
    return kind_ == Kind::Int ? int_equals_double(u_.i, other.u_.f) : int_equals_double(other.u_.i, u_.f);
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Bool: return u_.b == other.u_.b;
    case Kind::String: return *str() == *other.str();
    case Kind::List:
    case Kind::Record:
      return same_elements(*this, other, [](const Value& x, const Value& y) { return x.equals(y); });
    default: return false;  // numbers and Unknown handled above
  }
}

}  // namespace bpulint
