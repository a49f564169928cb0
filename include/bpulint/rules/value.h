// A fact value as seen by rule expressions: tri-state by design. Anything
// that cannot be known (dynamic dim, failed inference, absent attribute
// without default) is Unknown with a reason, never a guess.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace bpulint {

// How a dynamic dim prints everywhere (messages, facts, the graph's shapes):
// its name ("N"), or "?" when it has none or one of digits only, which
// would read as a static dim.
std::string dynamic_dim_text(const std::string& name);

class Value {
 public:
  enum class Kind : uint8_t { Unknown, Bool, Int, Float, String, List, Record };
  // A record's fields, sorted by name, names unique: one allocation per
  // record instead of one per field (records are built per node).
  using Fields = std::vector<std::pair<std::string, Value>>;

  Value() = default;  // Unknown, no reason
  Value(const Value& other);
  Value(Value&& other) noexcept : kind_(other.kind_), u_(other.u_) { other.kind_ = Kind::Unknown, other.u_.p = nullptr; }
  Value& operator=(const Value& other);
  Value& operator=(Value&& other) noexcept;
  // Inline for the common case (a scalar, a reasonless Unknown: nothing to
  // free), which a node's fact cache destroys by the million.
  ~Value() {
    if (holds_pointer() && u_.p != nullptr) release();
  }

  static Value unknown(std::string reason = {});
  // A dim the model names but does not fix (a dim_param such as N): Unknown
  // with the reason "dynamic dim 'N'", printed as its name, so every message
  // names a dynamic dim as the model and the --input-shape hint do.
  static Value dynamic_dim(const std::string& name);
  // The name a dynamic_dim was made with; "" for anything else.
  std::string dim_name() const;
  static Value of_bool(bool v);
  static Value of_int(int64_t v);
  static Value of_float(double v);
  static Value of_string(std::string v);
  static Value of_list(std::vector<Value> items);
  static Value of_record(std::map<std::string, Value> fields);

  Kind kind() const { return kind_; }
  bool is_unknown() const { return kind_ == Kind::Unknown; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }

  bool as_bool() const { return kind_ == Kind::Bool && u_.b; }
  int64_t as_int() const { return kind_ == Kind::Int ? u_.i : 0; }
  double as_number() const { return kind_ == Kind::Int ? static_cast<double>(u_.i) : kind_ == Kind::Float ? u_.f : 0.0; }
  // Also the reason for Unknown; "" for other kinds.
  const std::string& as_string() const;
  // Empty unless a List / a Record.
  const std::vector<Value>& items() const;
  const Fields& fields() const;
  // On other kinds: an empty scratch container, whose changes are lost.
  std::vector<Value>& items();
  Fields& fields();

  // Record member; returns nullptr when absent.
  const Value* field(const std::string& name) const;
  void set(const std::string& name, Value v);

  // Human/diagnostic rendering: 5, 2.5, true, 'float32', [5, 2, 2], ? for unknown
  // ([N, 16] for a dynamic_dim: its name, unless empty or all digits).
  std::string to_string() const;

  // Structural equality (Int 2 == Float 2.0). Unknown equals nothing.
  bool equals(const Value& other) const;
  // Indistinguishable to anything that reads it: same kind, same bits (Int 2
  // is not Float 2.0), Unknown with the same reason; lists and records deep.
  bool identical(const Value& other) const;

 private:
  // 16 bytes: facts are built and copied per node, so scalars carry no
  // string, list and map; those live behind the pointer of their kind.
  union Payload {
    void* p;  // first, so Payload{} is a null pointer. Unknown/String: std::string (or null);
              // List: std::vector<Value>; Record: Fields
    bool b;
    int64_t i;
    double f;
  };
  void release();
  bool holds_pointer() const { return kind_ == Kind::Unknown || kind_ >= Kind::String; }
  std::string* str() const { return static_cast<std::string*>(u_.p); }
  std::vector<Value>* list() const { return static_cast<std::vector<Value>*>(u_.p); }
  Fields* record() const { return static_cast<Fields*>(u_.p); }

  Kind kind_ = Kind::Unknown;
  Payload u_{};
};

}  // namespace bpulint
