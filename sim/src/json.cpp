#include "json.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace json {

static std::string kind_name(Value::Kind k) {
  static const char* n[] = {"null", "bool", "number", "string", "array", "object"};
  return n[k];
}

#define JSON_EXPECT(cond, k)                                                                  \
  if (!(cond)) throw Error(what + ": expected " + std::string(k) + ", got " + kind_name(kind_))

double Value::num(const std::string& what) const { JSON_EXPECT(kind_ == Number, "a number"); return d_; }
long long Value::integer(const std::string& what) const {
  JSON_EXPECT(kind_ == Number, "an integer");
  if (std::floor(d_) != d_) throw Error(what + ": expected an integer, got " + std::to_string(d_));
  return (long long)d_;
}
bool Value::boolean(const std::string& what) const { JSON_EXPECT(kind_ == Bool, "true/false"); return b_; }
const std::string& Value::str(const std::string& what) const { JSON_EXPECT(kind_ == String, "a string"); return s_; }
const std::vector<Value>& Value::arr(const std::string& what) const { JSON_EXPECT(kind_ == Array, "a list"); return a_; }
const std::map<std::string, Value>& Value::obj(const std::string& what) const { JSON_EXPECT(kind_ == Object, "an object"); return o_; }

const Value& Value::at(const std::string& k, const std::string& what) const {
  std::string w = what.empty() ? k : what + "." + k;
  if (kind_ != Object) throw Error((what.empty() ? "(top level)" : what) + ": expected an object");
  auto it = o_.find(k);
  if (it == o_.end()) throw Error(w + ": missing field");
  return it->second;
}

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
        else o += char(c);
    }
  }
  return o + "\"";
}

void Value::dump_to(std::string& out) const {
  switch (kind_) {
    case Null: out += "null"; break;
    case Bool: out += b_ ? "true" : "false"; break;
    case Number: {
      if (!std::isfinite(d_)) { out += "null"; break; }
      char b[40];
      if (std::floor(d_) == d_ && std::fabs(d_) < 9e15) snprintf(b, sizeof b, "%lld", (long long)d_);
      else snprintf(b, sizeof b, "%.10g", d_);
      out += b;
      break;
    }
    case String: out += quote(s_); break;
    case Array: {
      out += "[";
      for (size_t i = 0; i < a_.size(); ++i) { if (i) out += ", "; a_[i].dump_to(out); }
      out += "]";
      break;
    }
    case Object: {
      out += "{";
      bool first = true;
      for (auto& [k, v] : o_) { if (!first) out += ", "; first = false; out += quote(k); out += ": "; v.dump_to(out); }
      out += "}";
      break;
    }
  }
}
std::string Value::dump() const { std::string s; dump_to(s); return s; }

class Parser {
 public:
  Parser(const std::string& t, const std::string& w) : t_(t), w_(w) {}
  Value run() {
    Value v = value();
    ws();
    if (p_ != t_.size()) fail("trailing characters");
    return v;
  }

 private:
  const std::string& t_;
  std::string w_;
  size_t p_ = 0;
  [[noreturn]] void fail(const std::string& m) {
    size_t line = 1;
    for (size_t i = 0; i < p_ && i < t_.size(); ++i) line += t_[i] == '\n';
    throw Error(w_ + ":" + std::to_string(line) + ": (json): " + m);
  }
  void ws() { while (p_ < t_.size() && strchr(" \t\r\n", t_[p_])) ++p_; }
  Value value() {
    ws();
    if (p_ >= t_.size()) fail("unexpected end");
    char c = t_[p_];
    if (c == '{') {
      ++p_; Value v = Value::object(); ws();
      if (t_[p_] == '}') { ++p_; return v; }
      for (;;) {
        ws(); if (t_[p_] != '"') fail("expected a key");
        std::string k = string(); ws();
        if (t_[p_] != ':') fail("expected ':'");
        ++p_;
        v.o_[k] = value(); ws();
        if (t_[p_] == ',') { ++p_; continue; }
        if (t_[p_] == '}') { ++p_; return v; }
        fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++p_; Value v = Value::array(); ws();
      if (t_[p_] == ']') { ++p_; return v; }
      for (;;) {
        v.a_.push_back(value()); ws();
        if (t_[p_] == ',') { ++p_; continue; }
        if (t_[p_] == ']') { ++p_; return v; }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') return Value(string());
    if (!t_.compare(p_, 4, "true")) { p_ += 4; return Value(true); }
    if (!t_.compare(p_, 5, "false")) { p_ += 5; return Value(false); }
    if (!t_.compare(p_, 4, "null")) { p_ += 4; return Value(); }
    const char* s = t_.c_str() + p_;
    char* e = nullptr;
    double d = strtod(s, &e);
    if (e == s) fail(std::string("unexpected character '") + c + "'");
    p_ += e - s;
    return Value(d);
  }
  std::string string() {
    ++p_;
    std::string o;
    while (p_ < t_.size() && t_[p_] != '"') {
      char c = t_[p_++];
      if (c == '\\') {
        if (p_ >= t_.size()) fail("bad escape");
        char e = t_[p_++];
        switch (e) {
          case 'n': o += '\n'; break;
          case 't': o += '\t'; break;
          case 'r': o += '\r'; break;
          case 'b': o += '\b'; break;
          case 'f': o += '\f'; break;
          case 'u': {
            unsigned cp = std::stoul(t_.substr(p_, 4), nullptr, 16); p_ += 4;
            if (cp < 0x80) o += char(cp);
            else if (cp < 0x800) { o += char(0xC0 | (cp >> 6)); o += char(0x80 | (cp & 0x3F)); }
            else { o += char(0xE0 | (cp >> 12)); o += char(0x80 | ((cp >> 6) & 0x3F)); o += char(0x80 | (cp & 0x3F)); }
            break;
          }
          default: o += e;
        }
      } else o += c;
    }
    if (p_ >= t_.size()) fail("unterminated string");
    ++p_;
    return o;
  }
};

Value parse(const std::string& text, const std::string& where) { return Parser(text, where).run(); }

Value parse_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read (missing?)");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

}  // namespace json
