// The daemon's HTTP/1.1 server (issue 16: "a daemon no client can stall"): its own thread, one
// poll() loop over non-blocking sockets, so neither a client that never reads its answer nor
// hundreds of idle connections can hold up the RTL loop or the other clients. Strict framing:
// bounded header section (431) and body (413), Content-Length digits only (400), a malformed
// request line or header line 400, Transfer-Encoding 501, a request not complete within the read
// timeout 408. One request per connection (Connection: close).
//
// Why not cpp-httplib (Debian bookworm ships 0.11.4): it serves each connection on a worker of
// a fixed pool of max(8, cores-1) threads that blocks on the socket, so 100 idle connections hold
// every worker for the read timeout (the API stalls, the probe of issue 16); its Content-Length
// is strtoull (so "-1" is 2^64-1 and "12abc" is 12); a slow or oversized header is dropped with no
// 408/431 answer. JSON is nlohmann-json (api.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <atomic>
#include <vector>

namespace apta_http {

struct Limits {
  size_t max_header = 8192;      // request line + headers + CRLFCRLF (431 beyond)
  size_t max_headers = 64;       // header lines (431 beyond)
  size_t max_body = 65536;       // Content-Length (413 beyond)
  size_t max_conns = 512;        // open connections; one more is answered 503 at once and closed
  uint64_t read_ms = 2000;       // accept to complete request (408 after)
  uint64_t write_ms = 2000;      // answer to fully sent (dropped after)
  uint64_t answer_ms = 30000;    // request handed over to its answer (503 after)
};

struct Request {
  std::string method, target, body;
  std::string authorization;    // the Authorization header's value ("" if absent)
};
struct Reply {
  int code;
  std::string body;              // JSON
  std::string headers = {};      // extra header lines, each ending in CRLF (Allow, WWW-Authenticate)
};

enum class Parse { Incomplete, Complete, Error };

// Parses the bytes received so far. Complete: `req` filled. Error: `err` is the 4xx/5xx answer.
Parse parse(const std::string& in, const Limits& L, Request& req, Reply& err);
const char* reason(int code);
std::string serialize(const Reply& r);
std::string json_error(const std::string& msg);   // {"error": msg}

class Server {
 public:
  // Runs on the server thread. true: `rep` is the answer now; false: the request was taken and
  // will be answered by complete(id, ...) from any thread.
  using Handler = std::function<bool(uint64_t id, Request& req, Reply& rep)>;
  Server(int listen_fd, const Limits& L, Handler h);
  ~Server();
  void start();
  void stop();
  void complete(uint64_t id, Reply r);   // thread-safe

 private:
  struct Conn {
    int fd;
    uint64_t id;
    enum { Read, Wait, Write, Linger } st;
    uint64_t deadline;
    std::string in, out;
    size_t off = 0;
  };
  void loop();
  void answer(Conn& c, const Reply& r, uint64_t now);

  int lfd_, efd_;
  Limits L_;
  Handler h_;
  std::thread th_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::pair<uint64_t, Reply>> done_;
  std::vector<Conn> conns_;
  uint64_t next_id_ = 1;
};

}  // namespace apta_http
