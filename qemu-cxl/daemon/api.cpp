// The control-plane API's request validation: see api.h.
#include "api.h"

#include <cctype>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

extern "C" {
#include "apta_msg.h"
}

namespace apta_api {

Reply error_reply(int code, const std::string& msg) { return {code, apta_http::json_error(msg)}; }

bool pct_decode(const std::string& in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); i++) {
    if (in[i] != '%') { out += in[i]; continue; }
    if (i + 2 >= in.size() || !isxdigit(uint8_t(in[i + 1])) || !isxdigit(uint8_t(in[i + 2]))) return false;
    out += char(std::stoi(in.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return true;
}

bool parse_obj(const std::string& name, uint32_t& o) {
  if (name.empty() || name.size() > 10) return false;
  for (char c : name)
    if (!isdigit(uint8_t(c))) return false;
  unsigned long long v = strtoull(name.c_str(), nullptr, 10);
  if (v > 0xFFFFFFFFull || v >= (1ull << APTA_P_objIdBits)) return false;
  o = uint32_t(v);
  return true;
}

bool parse_objects_query(const std::string& query, std::vector<uint32_t>& ids, std::vector<std::string>& names,
                         std::string& err) {
  size_t p = query.find("objects=");
  if (p != std::string::npos && (p == 0 || query[p - 1] == '&')) {
    std::string list;
    if (!pct_decode(query.substr(p + 8, query.find('&', p) - (p + 8)), list)) {
      err = "objects: malformed percent-escape";
      return false;
    }
    size_t a = 0;
    while (a <= list.size() && !list.empty()) {
      size_t b = list.find(',', a);
      std::string n = list.substr(a, b == std::string::npos ? std::string::npos : b - a);
      uint32_t o;
      if (!n.empty()) {
        if (!parse_obj(n, o)) {
          err = "object names are decimal object ids: " + n;
          return false;
        }
        ids.push_back(o);
        names.push_back(n);
      }
      if (b == std::string::npos) break;
      a = b + 1;
    }
  }
  return true;
}

namespace {
// nlohmann-json with a callback that notes the first duplicate key (a parser that keeps the first or
// the last would disagree with another); false: `err` says why the body is no JSON.
bool parse_json_once(const std::string& body, nlohmann::json& j, std::string& err) {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> keys;
  std::string dup;
  json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
             dup.empty())
      dup = parsed.get<std::string>();
    return true;
  };
  try {
    j = json::parse(body, cb);
  } catch (const json::exception& e) {
    err = dup.empty() ? std::string("body is not JSON: ") + e.what() : "duplicate key " + dup;
    return false;
  }
  if (!dup.empty()) { err = "duplicate key " + dup; return false; }
  return true;
}
}  // namespace

bool parse_cancel_request(const std::string& body, Call& c, std::string& err) {
  nlohmann::json j;
  if (!parse_json_once(body, j, err)) return false;
  if (!j.is_object()) { err = "body must be a JSON object {object, version}"; return false; }
  for (auto& kv : j.items())
    if (kv.key() != "object" && kv.key() != "version") { err = "unknown field " + kv.key().substr(0, 64); return false; }
  if (!j.contains("object")) { err = "missing field object"; return false; }
  if (!j.contains("version")) { err = "missing field version"; return false; }
  uint32_t o;
  if (!j["object"].is_string() || !parse_obj(j["object"].get<std::string>(), o)) {
    err = "object: expected a decimal object id below 2^" + std::to_string(APTA_P_objIdBits) + " as a string, got " +
          j["object"].dump().substr(0, 32);
    return false;
  }
  if (!j["version"].is_number_unsigned() || j["version"].get<uint64_t>() == 0 ||
      j["version"].get<uint64_t>() >= (1ull << APTA_P_versionBits)) {
    err = "version: expected an integer 1.." + std::to_string((1ull << APTA_P_versionBits) - 1) + ", got " +
          j["version"].dump().substr(0, 32);
    return false;
  }
  c.obj = o;
  c.version = j["version"].get<uint64_t>();
  return true;
}

bool parse_object_request(const std::string& body, Call& c, std::string& err) {
  using json = nlohmann::json;
  json j;
  if (!parse_json_once(body, j, err)) return false;
  if (!j.is_object()) { err = "body must be a JSON object {obj, size[, valid]}"; return false; }
  for (auto& kv : j.items()) {
    if (kv.key() == "base") {
      err = "base: not accepted, the memory server allocates object storage (register with {obj, size}; the answer names the base)";
      return false;
    }
    if (kv.key() != "obj" && kv.key() != "size" && kv.key() != "valid") {
      err = "unknown field " + kv.key().substr(0, 64);
      return false;
    }
  }
  auto field = [&](const char* k, uint64_t& v, bool required) {
    if (!j.contains(k)) {
      if (required) err = std::string("missing field ") + k;
      return !required;
    }
    if (!j[k].is_number_unsigned()) {
      err = std::string(k) + ": expected a non-negative integer, got " + j[k].dump().substr(0, 32);
      return false;
    }
    v = j[k].get<uint64_t>();
    return true;
  };
  c.size = 0;
  if (!field("obj", c.obj, true) || !field("valid", c.valid, false)) return false;
  if (c.valid > 1) { err = "valid: expected 0 or 1, got " + std::to_string(c.valid); return false; }
  if (!field("size", c.size, c.valid == 1)) return false;
  if (c.obj >= (1ull << APTA_P_objIdBits)) { err = "obj: out of range (object ids have " + std::to_string(APTA_P_objIdBits) + " bits)"; return false; }
  if (c.size > 0xFFFF) { err = "size: out of range (at most 65535 lines)"; return false; }
  return true;
}

bool classify(const apta_http::Request& q, Call& c, Reply& rep) {
  std::string path = q.target, query;
  size_t qm = q.target.find('?');
  if (qm != std::string::npos) { path = q.target.substr(0, qm); query = q.target.substr(qm + 1); }
  auto method = [&](const char* want) {
    if (q.method == want) return true;
    rep = error_reply(405, "method " + q.method + " not allowed on " + path);
    rep.headers = std::string("Allow: ") + want + "\r\n";
    return false;
  };
  const std::string op = "/v1/objects/", sp = "/v1/servers/";
  if (path == "/v1/schedulable" || path == "/v1/status") {
    if (!method("GET")) return false;
    c.kind = Call::Schedulable;
    c.arg = path == "/v1/status" ? "" : query;
    return true;
  }
  if (path == "/v1/objects") {
    if (!method("POST")) return false;
    std::string err;
    if (!parse_object_request(q.body, c, err)) { rep = error_reply(400, err); return false; }
    c.kind = Call::PostObject;
    return true;
  }
  if (path == "/v1/cancel") {
    if (!method("POST")) return false;
    std::string err;
    if (!parse_cancel_request(q.body, c, err)) { rep = error_reply(400, err); return false; }
    c.kind = Call::Cancel;
    return true;
  }
  if (path.rfind(op, 0) == 0 && path.size() > op.size() && path.find('/', op.size()) == std::string::npos) {
    if (!method("GET")) return false;
    if (!pct_decode(path.substr(op.size()), c.arg)) { rep = error_reply(400, "object: malformed percent-escape"); return false; }
    c.kind = Call::Object;
    return true;
  }
  if (path.rfind(sp, 0) == 0) {
    std::string rest = path.substr(sp.size());
    size_t s = rest.find('/');
    if (s != std::string::npos && s > 0 && (rest.substr(s + 1) == "fence" || rest.substr(s + 1) == "rejoin")) {
      if (!method("POST")) return false;
      c.kind = Call::Ctrl;
      c.arg = rest.substr(0, s);
      c.fence = rest.substr(s + 1) == "fence";
      return true;
    }
  }
  rep = error_reply(404, "no such endpoint: " + q.method + " " + path);
  return false;
}

}  // namespace apta_api
