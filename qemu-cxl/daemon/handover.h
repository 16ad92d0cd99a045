// The API's hand-over between the HTTP thread and the RTL loop (the loop side is Daemon::serve_api).
#pragma once

#include <cstdint>

#include "http.h"

namespace apta_memd {

class Daemon;

// The HTTP server's handler, on its thread: authenticates, routes and validates the request
// (401/403/4xx answered at once in `rep`, true), or queues the call for the RTL loop (false: the
// answer comes later through Server::complete).
bool enqueue(Daemon& d, uint64_t id, apta_http::Request& q, apta_http::Reply& rep);

// A listening socket on 127.0.0.1:port (non-blocking); -1 with errno.
int listen_on(int port);

}  // namespace apta_memd
