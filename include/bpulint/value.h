// A fact value as seen by rule expressions: tri-state by design. Anything
// that cannot be known (dynamic dim, failed inference, absent attribute
// without default) is Unknown with a reason, never a guess.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bpulint {

class Value {
 public:
  enum class Kind { Unknown, Bool, Int, Float, String, List, Record };

  Value() = default;  // Unknown, no reason
  static Value unknown(std::string reason = {});
  static Value of_bool(bool v);
  static Value of_int(int64_t v);
  static Value of_float(double v);
  static Value of_string(std::string v);
  static Value of_list(std::vector<Value> items);
  static Value of_record(std::map<std::string, Value> fields);

  Kind kind() const { return kind_; }
  bool is_unknown() const { return kind_ == Kind::Unknown; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_number() const { return kind_ == Kind::Int ? static_cast<double>(i_) : f_; }
  const std::string& as_string() const { return s_; }  // also the reason for Unknown
  const std::vector<Value>& items() const { return list_; }
  std::vector<Value>& items() { return list_; }
  const std::map<std::string, Value>& fields() const { return fields_; }
  std::map<std::string, Value>& fields() { return fields_; }

  // Record member; returns nullptr when absent.
  const Value* field(const std::string& name) const;
  void set(const std::string& name, Value v) { fields_[name] = std::move(v); }

  // Human/diagnostic rendering: 5, 2.5, true, 'float32', [5, 2, 2], ? for unknown.
  std::string to_string() const;

  // Structural equality (Int 2 == Float 2.0). Unknown equals nothing.
  bool equals(const Value& other) const;

 private:
  Kind kind_ = Kind::Unknown;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::string s_;
  std::vector<Value> list_;
  std::map<std::string, Value> fields_;
};

}  // namespace bpulint
