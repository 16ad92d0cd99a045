// The API's answers: a validated call (api.h) run on the daemon, on the RTL loop's thread.
#pragma once

#include "api.h"
#include "http.h"

namespace apta_memd {

class Daemon;

// The answer to `c` (schema/controlplane.yaml): 200 with the call's JSON, or an error with
// {"error"[, "field", "code"]}.
apta_http::Reply execute(Daemon& d, const apta_api::Call& c);

}  // namespace apta_memd
