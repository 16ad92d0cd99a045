// Who may call the API: bearer tokens from --token-file and verified client certificates, with
// the roles of the Go control plane (scheduler-plugin/pkg/controlplane/auth.go).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "api.h"
#include "http.h"

namespace apta_memd {

// Every caller with a valid token may read; fence and rejoin need failure-detector, POST
// /v1/objects and /v1/cancel object-manager. compute-server and kubelet tokens (bound to one
// server) only read here: acks and invocations are ring traffic, not API calls.
struct Caller { std::string name, role, server; };

struct Tokens {
  std::vector<std::pair<std::string, Caller>> byToken;
  bool certs = false;              // --client-ca-file: a verified client certificate names a caller too
  bool on() const { return !byToken.empty() || certs; }
  // Constant time in the token's content: every entry is compared in full.
  const Caller* find(const std::string& tok) const;
};

// token,name,role[,server] per line (kube-apiserver's --token-auth-file); # comments, blank lines.
// false: `err` names the file, the line and the problem.
bool load_tokens(const std::string& path, const std::vector<std::string>& servers, Tokens& t, std::string& err);

// Before anything else (an unauthenticated caller learns nothing): the caller of `q` by its bearer
// token, else by its client certificate. false: `rep` is the 401 (or 403 for a certificate whose
// O is no role).
bool authenticate(const Tokens& t, const apta_http::Request& q, Caller& who, apta_http::Reply& rep);

// After routing: false with a 403 in `rep` when the call needs a role `who` does not have.
bool authorize(const Caller& who, const apta_api::Call& c, apta_http::Reply& rep);

}  // namespace apta_memd
