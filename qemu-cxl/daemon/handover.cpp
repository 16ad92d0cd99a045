// The API's hand-over: the HTTP thread checks who calls and what, and queues valid calls (at most
// Daemon::kApiQueue); the RTL loop runs them between cycles and hands the answers back. Sockets are
// never touched by the RTL loop, so a client that does not read costs it nothing.
#include "handover.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "replies.h"

namespace apta_memd {

bool enqueue(Daemon& d, uint64_t id, apta_http::Request& q, apta_http::Reply& rep) {
  apta_api::Call c;
  Caller who;
  if (d.tokens.on() && !authenticate(d.tokens, q, who, rep)) return true;   // 401 before anything else
  if (!apta_api::classify(q, c, rep)) return true;
  if (d.tokens.on() && !authorize(who, c, rep)) return true;
  c.id = id;
  {
    std::lock_guard<std::mutex> g(d.api_mu);
    if (d.api_q.size() >= Daemon::kApiQueue) { rep = apta_api::error_reply(503, "API busy: the RTL loop's queue is full"); return true; }
    d.api_q.push_back(std::move(c));
    d.api_pending++;
  }
  uint64_t one = 1;
  (void)!write(d.api_efd, &one, sizeof one);
  return false;
}

int listen_on(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || listen(s, 512) < 0) {
    close(s);
    return -1;
  }
  return s;
}

// The RTL loop's side of the API: waits up to `wait_ns` for a queued call (the idle loop's sleep),
// then runs at most 8 queued calls (each a few RTL cycles) and hands their answers to the HTTP
// thread. Sockets are never touched here: a client that does not read costs the loop nothing.
void Daemon::serve_api(uint64_t wait_ns) {
  if (api_efd < 0) {
    if (wait_ns) { timespec ts{0, long(wait_ns)}; nanosleep(&ts, nullptr); }
    return;
  }
  if (wait_ns && api_pending == 0) {
    pollfd p{api_efd, POLLIN, 0};
    timespec ts{0, long(wait_ns)};
    ppoll(&p, 1, &ts, nullptr);
  }
  if (api_pending == 0) return;
  uint64_t v;
  (void)!read(api_efd, &v, sizeof v);
  for (int i = 0; i < 8; i++) {
    apta_api::Call c;
    {
      std::lock_guard<std::mutex> g(api_mu);
      if (api_q.empty()) break;
      c = std::move(api_q.front());
      api_q.pop_front();
      api_pending--;
    }
    http->complete(c.id, execute(*this, c));
  }
}

}  // namespace apta_memd
