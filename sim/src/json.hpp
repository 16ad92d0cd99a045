// Minimal JSON value, parser and writer (no dependencies). Enough for params.json, plans,
// meta.json and the model checker's vectors; parse errors name the byte offset's line.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace json {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Value {
 public:
  enum Kind { Null, Bool, Number, String, Array, Object };
  Value() = default;
  Value(bool b) : kind_(Bool), b_(b) {}
  Value(double d) : kind_(Number), d_(d) {}
  Value(int i) : kind_(Number), d_(i) {}
  Value(long i) : kind_(Number), d_(double(i)) {}
  Value(long long i) : kind_(Number), d_(double(i)) {}
  Value(unsigned long i) : kind_(Number), d_(double(i)) {}
  Value(unsigned long long i) : kind_(Number), d_(double(i)) {}
  Value(const char* s) : kind_(String), s_(s) {}
  Value(std::string s) : kind_(String), s_(std::move(s)) {}
  static Value array() { Value v; v.kind_ = Array; return v; }
  static Value object() { Value v; v.kind_ = Object; return v; }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Null; }
  bool is_num() const { return kind_ == Number; }
  bool is_str() const { return kind_ == String; }
  bool is_arr() const { return kind_ == Array; }
  bool is_obj() const { return kind_ == Object; }
  bool is_bool() const { return kind_ == Bool; }

  double num(const std::string& what = "value") const;
  long long integer(const std::string& what = "value") const;
  bool boolean(const std::string& what = "value") const;
  const std::string& str(const std::string& what = "value") const;
  const std::vector<Value>& arr(const std::string& what = "value") const;
  const std::map<std::string, Value>& obj(const std::string& what = "value") const;

  bool has(const std::string& k) const { return kind_ == Object && o_.count(k); }
  // Member access that throws "<what>.<k>: missing field".
  const Value& at(const std::string& k, const std::string& what = "") const;
  Value& operator[](const std::string& k) { kind_ = Object; return o_[k]; }
  void push(Value v) { kind_ = Array; a_.push_back(std::move(v)); }
  size_t size() const { return kind_ == Array ? a_.size() : o_.size(); }

  std::string dump() const;
  void dump_to(std::string& out) const;

 private:
  Kind kind_ = Null;
  bool b_ = false;
  double d_ = 0;
  std::string s_;
  std::vector<Value> a_;
  std::map<std::string, Value> o_;
  friend class Parser;
};

Value parse(const std::string& text, const std::string& where);
Value parse_file(const std::string& path);
std::string quote(const std::string& s);

}  // namespace json
