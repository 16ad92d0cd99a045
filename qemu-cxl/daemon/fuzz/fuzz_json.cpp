// libFuzzer target: POST /v1/objects's JSON body (api.cpp parse_object_request, nlohmann-json with
// a callback that refuses duplicate keys), the bytes after the header section of a registration.
//
// Contract, beyond "no crash": an accepted body is a JSON object (read again here by nlohmann-json
// without the callback) whose keys are obj, size (absent only in a removal, valid 0) and optionally
// valid, each a non-negative integer equal to the accepted field and in range (obj < 2^objIdBits,
// size <= 65535, valid 0 or 1), never `base` (the memory server allocates); it re-serializes to a
// body accepted as the same call; a refusal names the field or the problem (one of the daemon's
// messages, each naming what was wrong).
#include <cstring>

#include <nlohmann/json.hpp>

#include "../api.h"
#include "contract.h"

extern "C" {
#include "apta_msg.h"
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using json = nlohmann::json;
  std::string body(reinterpret_cast<const char*>(data), size);
  apta_api::Call c;
  std::string err;
  if (!apta_api::parse_object_request(body, c, err)) {
    static const char* const named[] = {"body is not JSON: ", "duplicate key ", "body must be a JSON object", "unknown field ",
                                        "missing field ", "obj: ", "base: ", "size: ", "valid: "};
    bool ok = false;
    for (const char* p : named) ok = ok || err.rfind(p, 0) == 0;
    REQUIRE(ok, "refused %s with \"%s\", which names no field or problem", excerpt(body).c_str(), excerpt(err).c_str());
    return 0;
  }
  json j = json::parse(body, nullptr, false);
  REQUIRE(j.is_object(), "accepted %s, which is not a JSON object", excerpt(body).c_str());
  REQUIRE(!j.contains("base"), "accepted %s, which names a base", excerpt(body).c_str());
  const char* keys[] = {"obj", "size", "valid"};
  uint64_t* vals[] = {&c.obj, &c.size, &c.valid};
  size_t known = 0;
  for (int i = 0; i < 3; i++) {
    if (!j.contains(keys[i])) {
      REQUIRE((i == 2 && c.valid == 1) || (i == 1 && c.valid == 0 && c.size == 0), "accepted %s without %s",
              excerpt(body).c_str(), keys[i]);
      continue;
    }
    known++;
    REQUIRE(j[keys[i]].is_number_unsigned() && j[keys[i]].get<uint64_t>() == *vals[i], "accepted %s: %s read as %llu",
            excerpt(body).c_str(), keys[i], (unsigned long long)*vals[i]);
  }
  REQUIRE(j.size() == known, "accepted %s with fields beyond obj, size, valid", excerpt(body).c_str());
  REQUIRE(c.obj < (1ull << APTA_P_objIdBits) && c.size <= 0xFFFF && c.valid <= 1,
          "accepted out of range: obj %llu size %llu valid %llu", (unsigned long long)c.obj,
          (unsigned long long)c.size, (unsigned long long)c.valid);
  std::string re = json{{"obj", c.obj}, {"size", c.size}, {"valid", c.valid}}.dump();
  apta_api::Call c2;
  std::string err2;
  REQUIRE(apta_api::parse_object_request(re, c2, err2) && c2.obj == c.obj && c2.size == c.size && c2.valid == c.valid,
          "accepted %s, its re-serialization %s: %s", excerpt(body).c_str(), re.c_str(), err2.c_str());
  return 0;
}
