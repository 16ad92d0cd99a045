// Bearer tokens and client certificates of the API: see tokens.h.
#include "tokens.h"

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

namespace apta_memd {

namespace {
const char* const kRoles[] = {"reader", "failure-detector", "object-manager", "compute-server", "kubelet"};
bool is_role(const std::string& r) { return std::find(std::begin(kRoles), std::end(kRoles), r) != std::end(kRoles); }
}  // namespace

const Caller* Tokens::find(const std::string& tok) const {
  const Caller* hit = nullptr;
  for (auto& kv : byToken) {
    unsigned diff = unsigned(kv.first.size() ^ tok.size());
    for (size_t i = 0; i < kv.first.size(); i++) diff |= uint8_t(kv.first[i]) ^ uint8_t(i < tok.size() ? tok[i] : 0);
    if (diff == 0) hit = &kv.second;
  }
  return hit;
}

bool load_tokens(const std::string& path, const std::vector<std::string>& servers, Tokens& t, std::string& err) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) { err = path + ": " + strerror(errno); return false; }
  char buf[4096];
  auto trim = [](std::string x) {
    x.erase(0, x.find_first_not_of(" \t\r\n"));
    x.erase(x.find_last_not_of(" \t\r\n") + 1);
    return x;
  };
  for (int line = 1; fgets(buf, sizeof buf, f); line++) {
    std::string l = trim(buf);
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> fs;
    size_t p = 0;
    for (size_t q; (q = l.find(',', p)) != std::string::npos; p = q + 1) fs.push_back(trim(l.substr(p, q - p)));
    fs.push_back(trim(l.substr(p)));
    std::string at = path + " line " + std::to_string(line) + ": ";
    if (fs.size() < 3 || fs.size() > 4) { err = at + "want token,name,role[,server], got " + std::to_string(fs.size()) + " fields"; break; }
    Caller c{fs[1], fs[2], fs.size() == 4 ? fs[3] : ""};
    if (fs[0].size() < 16) { err = at + "token of " + c.name + " shorter than 16 bytes"; break; }
    if (!is_role(c.role)) {
      err = at + "unknown role \"" + c.role + "\" (want reader, failure-detector, object-manager, compute-server or kubelet)";
      break;
    }
    if (c.role == "compute-server" && c.server.empty()) { err = at + "a compute-server token must name its server"; break; }
    if (!c.server.empty() && std::find(servers.begin(), servers.end(), c.server) == servers.end()) {
      err = at + "unknown server " + c.server;
      break;
    }
    if (t.find(fs[0])) { err = at + "caller " + c.name + ": token already assigned"; break; }
    t.byToken.emplace_back(fs[0], c);
  }
  fclose(f);
  if (err.empty() && !t.on()) err = path + ": no tokens";
  return err.empty();
}

bool authenticate(const Tokens& t, const apta_http::Request& q, Caller& who, apta_http::Reply& rep) {
  const std::string& h = q.authorization;
  if (h.size() > 7 && strncasecmp(h.c_str(), "Bearer ", 7) == 0) {
    if (const Caller* c = t.find(h.substr(7))) { who = *c; return true; }
  } else if (h.empty() && t.certs && !q.cert_name.empty()) {
    // a verified client certificate (http.h): CN = caller, O = role, no server binding (the
    // roles bound to a server only read here)
    who = {q.cert_name, q.cert_role, ""};
    if (is_role(who.role)) return true;
    rep = apta_api::error_reply(403, "client certificate of " + who.name + ": organization (O) \"" + who.role +
                                         "\" is no role (want reader, failure-detector, object-manager, compute-server or kubelet)");
    return false;
  }
  rep = apta_api::error_reply(401, t.certs ? "missing or invalid bearer token or client certificate"
                                           : "missing or invalid bearer token");
  rep.headers = "WWW-Authenticate: Bearer realm=\"apta-memd\"\r\n";
  return false;
}

bool authorize(const Caller& who, const apta_api::Call& c, apta_http::Reply& rep) {
  using apta_api::Call;
  const char* need = c.kind == Call::PostObject || c.kind == Call::Cancel ? "object-manager"
                     : c.kind == Call::Ctrl ? "failure-detector" : nullptr;
  if (!need || who.role == need) return true;
  rep = apta_api::error_reply(403, "caller " + who.name + " (role " + who.role + ") may not do this: role " + need + " required");
  return false;
}

}  // namespace apta_memd
