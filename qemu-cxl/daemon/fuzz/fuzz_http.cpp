// libFuzzer target: the API's HTTP request parsing and validation, the code the daemon's HTTP
// thread runs on the bytes a client sends (http.cpp apta_http::parse, then api.cpp classify,
// parse_objects_query and parse_obj as the RTL loop applies them).
//
// Input: the bytes received on one connection. They are parsed with the daemon's limits and with
// tight ones (256-byte header section, 4 header lines, 64-byte body), so that 413 and 431 are
// reached by small inputs too.
//
// Contract, beyond "no crash":
//  - streaming: the server parses whatever prefix has arrived, so the verdict must not depend on
//    how the bytes were split (prefixes cut around every CRLF and at 16 other places): a prefix of an accepted request is Incomplete (or the same request,
//    once the body is in); a prefix that is an error stays an error; Complete/Error stay put when
//    more bytes follow;
//  - an accepted request is what the grammar allows (checked here on its own: method [A-Z]{1,16},
//    origin-form target, token ":" field-value header lines without controls, at most one
//    Content-Length that is 1*DIGIT and equals the body's length, no Transfer-Encoding, at most
//    one Authorization, the limits) and re-serializes (canonical request line and headers) to a
//    request that parses to the same fields;
//  - an error is 400/413/431/501 with a JSON {"error": ...} that names what was wrong, and leaves
//    the request unfilled;
//  - routing: a routed call is consistent with its path and method and its arguments re-serialize
//    to the same call; a refused one is 400/404/405 (405 with Allow) with a JSON error.
#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "../api.h"
#include "../http.h"
#include "contract.h"

extern "C" {
#include "apta_msg.h"
}

namespace {

using apta_http::Limits;
using apta_http::Parse;
using apta_http::Reply;
using apta_http::Request;

const char* verdict(Parse p) { return p == Parse::Complete ? "Complete" : p == Parse::Error ? "Error" : "Incomplete"; }

std::string show(const Request& r) {
  return r.method + " " + r.target + " auth=" + excerpt(r.authorization, 24) + " body(" + std::to_string(r.body.size()) + ")=" + excerpt(r.body, 24);
}
bool below(uint64_t v, unsigned bits) { return bits >= 64 || v < (1ull << bits); }
bool same(const Request& a, const Request& b) {
  return a.method == b.method && a.target == b.target && a.body == b.body && a.authorization == b.authorization;
}

void check_error_json(const Reply& r, const char* what) {
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  REQUIRE(j.is_object() && j.contains("error") && j["error"].is_string() && !j["error"].get<std::string>().empty(),
          "%s answer %d without a JSON error: %s", what, r.code, excerpt(r.body).c_str());
}

bool tchar(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c && strchr("!#$%&'*+-.^_`|~", c)); }
std::string lower(std::string s) {
  for (char& c : s) c = char(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return s;
}
std::string trim(const std::string& v) {
  size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t");
  return a == std::string::npos ? "" : v.substr(a, b - a + 1);
}

// An accepted request, checked against the grammar on its own (not with parse's code).
void check_accepted(const std::string& in, const Limits& L, const Request& q) {
  REQUIRE(!q.method.empty() && q.method.size() <= 16 &&
              std::all_of(q.method.begin(), q.method.end(), [](char c) { return c >= 'A' && c <= 'Z'; }),
          "accepted method \"%s\"", excerpt(q.method).c_str());
  REQUIRE(!q.target.empty() && q.target[0] == '/' &&
              std::all_of(q.target.begin(), q.target.end(), [](char c) { return c > 0x20 && c < 0x7f; }),
          "accepted target \"%s\"", excerpt(q.target).c_str());
  size_t he = in.find("\r\n\r\n");
  REQUIRE(he != std::string::npos && he + 4 <= L.max_header, "accepted a header section of %zu bytes (limit %zu)",
          he == std::string::npos ? in.size() : he + 4, L.max_header);
  size_t le = in.find("\r\n");
  std::string line = in.substr(0, le);
  REQUIRE(line == q.method + " " + q.target + " HTTP/1.1" || line == q.method + " " + q.target + " HTTP/1.0",
          "accepted request line \"%s\" as %s", excerpt(line).c_str(), show(q).c_str());
  size_t lines = 0, cls = 0, auths = 0;
  std::string clv, authv;
  for (size_t p = le + 2; p < he + 2;) {
    size_t e = in.find("\r\n", p);
    std::string h = in.substr(p, e - p);
    p = e + 2;
    lines++;
    size_t c = h.find(':');
    REQUIRE(c != std::string::npos && c > 0 && std::all_of(h.begin(), h.begin() + long(c), tchar),
            "accepted header line \"%s\"", excerpt(h).c_str());
    std::string name = lower(h.substr(0, c)), val = h.substr(c + 1);
    for (char ch : val)
      REQUIRE(!((unsigned char)ch < 0x20 && ch != '\t') && ch != 0x7f, "accepted a control character in header %s", name.c_str());
    REQUIRE(name != "transfer-encoding", "accepted Transfer-Encoding");
    if (name == "content-length") cls++, clv = trim(val);
    if (name == "authorization") auths++, authv = trim(val);
  }
  REQUIRE(lines <= L.max_headers, "accepted %zu header lines (limit %zu)", lines, L.max_headers);
  REQUIRE(cls <= 1 && auths <= 1, "accepted %zu Content-Length and %zu Authorization headers", cls, auths);
  REQUIRE(q.authorization == authv, "Authorization \"%s\" read as \"%s\"", excerpt(authv).c_str(), excerpt(q.authorization).c_str());
  if (cls) {
    REQUIRE(!clv.empty() && clv.size() <= 18 && std::all_of(clv.begin(), clv.end(), [](char c) { return c >= '0' && c <= '9'; }),
            "accepted Content-Length \"%s\" (not 1*DIGIT of at most 18)", excerpt(clv).c_str());
    REQUIRE(std::stoull(clv) == q.body.size(), "Content-Length %s, body of %zu bytes", clv.c_str(), q.body.size());
  } else {
    REQUIRE(q.body.empty(), "a body of %zu bytes without Content-Length", q.body.size());
  }
  REQUIRE(q.body.size() <= L.max_body, "accepted a body of %zu bytes (limit %zu)", q.body.size(), L.max_body);
  REQUIRE(in.compare(he + 4, q.body.size(), q.body) == 0, "the body is not the bytes after the header section");

  // re-serialized canonically (never longer than the original), it parses to the same request
  std::string re = q.method + " " + q.target + " HTTP/1.1\r\n";
  if (auths) re += "Authorization: " + q.authorization + "\r\n";
  if (cls) re += "Content-Length: " + std::to_string(q.body.size()) + "\r\n";
  re += "\r\n" + q.body;
  Request q2;
  Reply e2{0, ""};
  Parse v2 = apta_http::parse(re, L, q2, e2);
  REQUIRE(v2 == Parse::Complete && same(q, q2), "accepted %s, its re-serialization: %s %s", show(q).c_str(), verdict(v2),
          v2 == Parse::Complete ? show(q2).c_str() : excerpt(e2.body).c_str());
}

void check_refused(const Reply& err, const Request& q) {
  REQUIRE(err.code == 400 || err.code == 413 || err.code == 431 || err.code == 501, "refused with %d", err.code);
  check_error_json(err, "refused");
  const char* names = err.code == 413 ? "body" : err.code == 431 ? "header" : err.code == 501 ? "Transfer-Encoding" : nullptr;
  if (names) REQUIRE(err.body.find(names) != std::string::npos, "%d does not name the %s: %s", err.code, names, err.body.c_str());
  else REQUIRE(err.body.find("request line") != std::string::npos || err.body.find("header") != std::string::npos ||
                   err.body.find("Content-Length") != std::string::npos || err.body.find("Authorization") != std::string::npos,
               "400 names nothing: %s", err.body.c_str());
  REQUIRE(q.method == "\x01" && q.target == "\x01" && q.body == "\x01", "a refused request was filled in: %s", show(q).c_str());
}

Parse run(const std::string& in, const Limits& L, Request& q, Reply& e) {
  q.method = q.target = q.body = "\x01";     // "unfilled", to see what parse writes
  e = {0, ""};
  return apta_http::parse(in, L, q, e);
}

// What the daemon does with an accepted request: classify on the HTTP thread, then the RTL loop's
// own argument checks (the objects= query, the object name).
void check_routing(const Request& q) {
  apta_api::Call c;
  Reply rep{0, ""};
  std::string path = q.target.substr(0, q.target.find('?'));
  if (!apta_api::classify(q, c, rep)) {
    REQUIRE(rep.code == 400 || rep.code == 404 || rep.code == 405, "classify refused with %d", rep.code);
    check_error_json(rep, "classify");
    if (rep.code == 405) REQUIRE(rep.headers.rfind("Allow: ", 0) == 0, "405 without Allow");
    return;
  }
  switch (c.kind) {
    case apta_api::Call::Schedulable: {
      REQUIRE(q.method == "GET" && (path == "/v1/schedulable" || path == "/v1/status"), "%s %s routed to schedulable",
              q.method.c_str(), excerpt(q.target).c_str());
      std::vector<uint32_t> ids, ids2;
      std::vector<std::string> names, names2;
      std::string err, err2;
      if (!apta_api::parse_objects_query(c.arg, ids, names, err)) {
        REQUIRE(!err.empty() && err.find("object") != std::string::npos, "objects= refused without naming it: %s", err.c_str());
        return;
      }
      REQUIRE(ids.size() == names.size(), "%zu ids for %zu names", ids.size(), names.size());
      std::string re = "objects=";
      for (size_t i = 0; i < ids.size(); i++) {
        uint32_t o = ~0u;
        REQUIRE(apta_api::parse_obj(names[i], o) && o == ids[i] && below(ids[i], APTA_P_objIdBits),
                "object %s read as %u", excerpt(names[i]).c_str(), ids[i]);
        re += (i ? "," : "") + names[i];
      }
      REQUIRE(apta_api::parse_objects_query(re, ids2, names2, err2) && ids2 == ids && names2 == names,
              "objects= re-serialized as %s reads differently", excerpt(re).c_str());
      return;
    }
    case apta_api::Call::Object: {
      REQUIRE(q.method == "GET" && path.rfind("/v1/objects/", 0) == 0 && path.find('/', 12) == std::string::npos,
              "%s %s routed to an object", q.method.c_str(), excerpt(q.target).c_str());
      uint32_t o = 0, o2 = 1;
      if (apta_api::parse_obj(c.arg, o))
        REQUIRE(apta_api::parse_obj(std::to_string(o), o2) && o2 == o && below(o, APTA_P_objIdBits),
                "object %s read as %u", excerpt(c.arg).c_str(), o);
      return;
    }
    case apta_api::Call::PostObject: {
      REQUIRE(q.method == "POST" && path == "/v1/objects", "%s %s routed to registerObject", q.method.c_str(), excerpt(q.target).c_str());
      REQUIRE(c.obj < (1ull << APTA_P_objIdBits) && c.size <= 0xFFFF && c.valid <= 1,
              "registerObject accepted out of range: obj %llu size %llu valid %llu", (unsigned long long)c.obj,
              (unsigned long long)c.size, (unsigned long long)c.valid);
      return;   // its body: fuzz_json.cpp
    }
    case apta_api::Call::Cancel:
      REQUIRE(q.method == "POST" && path == "/v1/cancel", "%s %s routed to cancel", q.method.c_str(), excerpt(q.target).c_str());
      REQUIRE(c.obj < (1ull << APTA_P_objIdBits) && c.version >= 1 && c.version < (1ull << APTA_P_versionBits),
              "cancel accepted out of range: obj %llu version %llu", (unsigned long long)c.obj,
              (unsigned long long)c.version);
      return;
    case apta_api::Call::Ctrl:
      REQUIRE(q.method == "POST" && path == "/v1/servers/" + c.arg + (c.fence ? "/fence" : "/rejoin") && !c.arg.empty(),
              "%s %s routed to %s of \"%s\"", q.method.c_str(), excerpt(q.target).c_str(), c.fence ? "fence" : "rejoin",
              excerpt(c.arg).c_str());
      return;
  }
  violated("classify returned an unknown kind %d", int(c.kind));
}

void check(const std::string& in, const Limits& L) {
  Request q;
  Reply e{0, ""};
  Parse v = run(in, L, q, e);
  if (v == Parse::Complete) check_accepted(in, L, q);
  if (v == Parse::Error) check_refused(e, q);
  if (v != Parse::Complete) REQUIRE(q.method == "\x01" && q.body == "\x01", "%s, but the request was filled in", verdict(v));

  // streaming: prefixes cut around every CRLF (where the parser's decisions are) and at 16
  // evenly spaced places (every prefix of a short input)
  std::vector<size_t> cuts;
  if (in.size() <= 64) {
    for (size_t k = 0; k < in.size(); k++) cuts.push_back(k);
  } else {
    for (size_t k = 0; k < 16; k++) cuts.push_back(in.size() * k / 16);
    for (size_t p = in.find("\r\n"); p != std::string::npos && cuts.size() < 64; p = in.find("\r\n", p + 1))
      for (size_t k = p > 2 ? p - 2 : 0; k < std::min(in.size(), p + 5); k++) cuts.push_back(k);
  }
  for (size_t k : cuts) {
    Request qk;
    Reply ek{0, ""};
    Parse vk = run(in.substr(0, k), L, qk, ek);
    if (vk == Parse::Complete)
      REQUIRE(v == Parse::Complete && same(q, qk), "the first %zu bytes parse as %s, all %zu as %s", k, show(qk).c_str(),
              in.size(), v == Parse::Complete ? show(q).c_str() : verdict(v));
    if (vk == Parse::Error)
      REQUIRE(v == Parse::Error, "the first %zu bytes are refused (%d %s), all %zu bytes are %s", k, ek.code,
              excerpt(ek.body).c_str(), in.size(), verdict(v));
  }
  if (v == Parse::Complete) check_routing(q);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  check(in, Limits{});
  Limits tight;
  tight.max_header = 256;
  tight.max_headers = 4;
  tight.max_body = 64;
  check(in, tight);
  return 0;
}
