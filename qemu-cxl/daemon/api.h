// The control-plane API's request validation (schema/controlplane.yaml), with nothing of the RTL
// in it: routing (classify), POST /v1/objects's JSON body, object names and the objects= query.
// The daemon (handover.cpp) and the fuzz target (fuzz/fuzz_http.cpp) run this one definition; what
// it refuses is answered at once (400/404/405) and changes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "http.h"

namespace apta_api {

using apta_http::Reply;

// An API request as the HTTP thread validated it (http.h, classify()), executed by the RTL loop.
struct Call {
  enum Kind { Schedulable, Object, PostObject, Ctrl, Cancel } kind = Schedulable;
  std::string arg;                 // the query (Schedulable), object name (Object), server name (Ctrl)
  uint64_t obj = 0, size = 0, valid = 1;
  uint64_t version = 0;            // Cancel: no put will make this version (or a later one) of obj
  bool fence = false;
  uint64_t id = 0;                 // the HTTP server's connection id
};

Reply error_reply(int code, const std::string& msg);   // {"error": msg}

// RFC 3986 percent-decoding of a query value or path segment (Go's client sends "103%2C104" for
// "103,104"); false on a malformed escape.
bool pct_decode(const std::string& in, std::string& out);

// A decimal object id below 2^objIdBits (at most 10 digits, nothing else).
bool parse_obj(const std::string& name, uint32_t& o);

// The objects= parameter of GET /v1/schedulable's query (percent-decoded, comma-separated object
// ids, empty names skipped): the ids and their names as given. false: `err` names the problem.
bool parse_objects_query(const std::string& query, std::vector<uint32_t>& ids, std::vector<std::string>& names,
                         std::string& err);

// POST /v1/objects's body (controlplane.yaml ObjectRequest) by nlohmann-json: a JSON object with
// obj and size (non-negative integers) and optionally valid (0 or 1), nothing else; a removal
// (valid 0) may leave size out. No `base`: the memory server allocates the storage (its answer
// names the base). A key twice is refused (a parser that keeps the first or the last would
// disagree with another). false: `err` names the field or the problem.
bool parse_object_request(const std::string& body, Call& c, std::string& err);

// POST /v1/cancel's body (controlplane.yaml CancelRequest): {"object": "<decimal id>", "version": n},
// nothing else, no key twice; version 1..2^versionBits-1 (the RTL's counter width: a larger one could
// never be reached). false: `err` names the field or the problem.
bool parse_cancel_request(const std::string& body, Call& c, std::string& err);

// On the HTTP thread: route and validate a request. true: a Call for the RTL loop; false: `rep`
// is the answer (404, 405, 400), and nothing was changed.
bool classify(const apta_http::Request& q, Call& c, Reply& rep);

}  // namespace apta_api
