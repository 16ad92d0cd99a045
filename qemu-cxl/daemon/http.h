// The daemon's HTTP/1.1 server, made so that no client can stall the daemon: its own thread, one
// poll() loop over non-blocking sockets, so neither a client that never reads its answer nor
// hundreds of idle connections can hold up the RTL loop or the other clients. Strict framing:
// bounded header section (431) and body (413), Content-Length digits only (400), a malformed
// request line or header line 400, Transfer-Encoding 501, a request not complete within the read
// timeout 408. One request per connection (Connection: close).
//
// TLS (optional, OpenSSL): the handshake, reads and writes are non-blocking steps of the same
// poll() loop (a connection waits for whichever of POLLIN/POLLOUT OpenSSL asked for), so a client
// that stalls mid-handshake costs a pollfd until the read timeout, which counts from accept, and
// is then closed. TLS 1.2 and 1.3 only; no renegotiation, no session tickets (one request per
// connection). Plain HTTP sent to a TLS port is answered 400 in plain text and closed. With a
// client CA, a verified client certificate names a caller: subject CN = caller name, O = role
// (as kube-apiserver reads CN = user, O = group).
//
// Why not cpp-httplib (Debian bookworm ships 0.11.4): it serves each connection on a worker of
// a fixed pool of max(8, cores-1) threads that blocks on the socket, so 100 idle connections hold
// every worker for the read timeout (the API stalls); its Content-Length
// is strtoull (so "-1" is 2^64-1 and "12abc" is 12); a slow or oversized header is dropped with no
// 408/431 answer. JSON is nlohmann-json: requests in api.cpp, answers in replies.cpp and json_text.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json_fwd.hpp>
#include <atomic>
#include <vector>

struct ssl_ctx_st;   // OpenSSL's SSL_CTX and SSL (http.cpp includes <openssl/ssl.h>)
struct ssl_st;

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
  std::string cert_name, cert_role;   // a verified client certificate's CN and O ("" if none)
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
std::string json_text(const nlohmann::ordered_json& j);   // an answer's body
std::string json_error(const std::string& msg);          // {"error": msg}

// The TLS side of a server: certificate, key and optional client CA, read at start-up.
struct TlsFiles {
  std::string cert, key, client_ca;    // PEM files; client_ca "" = no client certificates asked
};
class Tls {
 public:
  // nullptr with `err` naming the file and the problem (unreadable, not PEM, key not the cert's).
  static std::shared_ptr<Tls> load(const TlsFiles& f, std::string& err);
  ~Tls();
  ssl_ctx_st* ctx() const { return ctx_; }
  bool client_certs() const { return client_certs_; }
 private:
  ssl_ctx_st* ctx_ = nullptr;
  bool client_certs_ = false;
};

class Server {
 public:
  // Runs on the server thread. true: `rep` is the answer now; false: the request was taken and
  // will be answered by complete(id, ...) from any thread.
  using Handler = std::function<bool(uint64_t id, Request& req, Reply& rep)>;
  // tls: nullptr = plain HTTP.
  Server(int listen_fd, const Limits& L, Handler h, std::shared_ptr<Tls> tls = nullptr);
  ~Server();
  void start();
  void stop();
  void complete(uint64_t id, Reply r);   // thread-safe

 private:
  struct Conn {
    int fd;
    uint64_t id;
    enum { Handshake, Read, Wait, Write, Linger } st;
    uint64_t deadline;
    std::string in, out;
    size_t off = 0;
    ssl_st* ssl = nullptr;       // TLS: the session (owned; freed when the connection closes)
    short want = 0;              // TLS: the event OpenSSL waits for (POLLIN/POLLOUT); 0 = the state's own
    bool sniffed = false;        // TLS: the first byte was seen to be a TLS handshake record
    std::string cert_name, cert_role;
  };
  void loop();
  void answer(Conn& c, const Reply& r, uint64_t now);
  void handshake(Conn& c, bool& drop, uint64_t now);
  ssize_t recv_some(Conn& c, char* buf, size_t n);        // > 0 bytes, 0 EOF, -1 not now, -2 broken
  ssize_t send_some(Conn& c, const char* buf, size_t n);  // > 0 bytes, -1 not now, -2 broken
  static ssize_t io_result();                              // a plain recv/send's r < 0, by errno
  static ssize_t tls_result(Conn& c, int r, bool reading);                      // SSL_read/SSL_write's
  void close_conn(Conn& c);

  int lfd_, efd_;
  Limits L_;
  Handler h_;
  std::shared_ptr<Tls> tls_;
  std::thread th_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::pair<uint64_t, Reply>> done_;
  std::vector<Conn> conns_;
  uint64_t next_id_ = 1;
};

}  // namespace apta_http
