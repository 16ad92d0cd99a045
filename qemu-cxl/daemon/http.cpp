// The daemon's HTTP/1.1 server: see http.h.
#include "http.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

namespace apta_http {
namespace {

uint64_t now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000 + uint64_t(t.tv_nsec) / 1000000;
}

bool tchar(char c) {   // RFC 9110 token characters
  return isalnum(uint8_t(c)) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

Parse fail(Reply& err, int code, const std::string& msg) {
  err = {code, json_error(msg)};
  return Parse::Error;
}

// OpenSSL's error queue as one line (and emptied).
std::string ssl_errors() {
  std::string s;
  for (unsigned long e; (e = ERR_get_error()) != 0;) {
    char b[256];
    ERR_error_string_n(e, b, sizeof b);
    s += (s.empty() ? "" : "; ") + std::string(b);
  }
  return s.empty() ? "no detail from OpenSSL" : s;
}

bool readable(const char* flag, const std::string& path, std::string& err) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) {
    err = std::string(flag) + " " + path + ": " + strerror(errno);
    return false;
  }
  fclose(f);
  return true;
}

// The one entry `nid` of a certificate subject as UTF-8; "" if absent, repeated (an ambiguous
// name or role) or holding control characters.
std::string subject_entry(X509_NAME* nm, int nid) {
  int i = X509_NAME_get_index_by_NID(nm, nid, -1);
  if (i < 0 || X509_NAME_get_index_by_NID(nm, nid, i) >= 0) return "";
  unsigned char* u = nullptr;
  int n = ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(nm, i)));
  if (n < 0) return "";
  std::string v(reinterpret_cast<char*>(u), size_t(n));
  OPENSSL_free(u);
  for (char c : v)
    if (uint8_t(c) < 0x20 || c == 0x7f) return "";
  return v;
}

}  // namespace

// ---- TLS ------------------------------------------------------------------------------------------
std::shared_ptr<Tls> Tls::load(const TlsFiles& f, std::string& err) {
  if (f.cert.empty() != f.key.empty()) {
    err = "--tls-cert-file and --tls-private-key-file go together";
    return nullptr;
  }
  if (!readable("--tls-cert-file", f.cert, err) || !readable("--tls-private-key-file", f.key, err) ||
      (!f.client_ca.empty() && !readable("--client-ca-file", f.client_ca, err)))
    return nullptr;
  ERR_clear_error();
  std::shared_ptr<Tls> t(new Tls);
  SSL_CTX* ctx = t->ctx_ = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    err = "TLS: " + ssl_errors();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // a connection's answer may move in memory between two SSL_write calls (the Conn vector)
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // one request per connection: nothing to resume, so no session cache. One TLS 1.3 ticket is
  // still sent, for its timing: it goes out as the client's Finished arrives, so the client's
  // request (held by Nagle's algorithm until its Finished is acknowledged) leaves at once instead
  // of after the server's delayed ACK (40 ms per request, measured with Python's ssl client)
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 1);
  if (SSL_CTX_use_certificate_chain_file(ctx, f.cert.c_str()) != 1) {
    err = "--tls-cert-file " + f.cert + ": not a PEM certificate chain (" + ssl_errors() + ")";
    return nullptr;
  }
  // read by hand so that a key of another certificate is told apart from a file that is no key;
  // an encrypted key is refused (no prompt: the password callback gives none)
  FILE* kf = fopen(f.key.c_str(), "r");
  EVP_PKEY* pk = kf ? PEM_read_PrivateKey(kf, nullptr, [](char*, int, int, void*) { return 0; }, nullptr) : nullptr;
  if (kf) fclose(kf);
  if (!pk) {
    err = "--tls-private-key-file " + f.key + ": not an unencrypted PEM private key (" + ssl_errors() + ")";
    return nullptr;
  }
  bool ok = SSL_CTX_use_PrivateKey(ctx, pk) == 1 && SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(pk);
  if (!ok) {
    ERR_clear_error();
    err = "--tls-private-key-file " + f.key + " is not the key of the certificate in --tls-cert-file " + f.cert;
    return nullptr;
  }
  if (X509* x = SSL_CTX_get0_certificate(ctx)) {
    if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
      err = "--tls-cert-file " + f.cert + ": the certificate has expired";
      return nullptr;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
      err = "--tls-cert-file " + f.cert + ": the certificate is not valid yet";
      return nullptr;
    }
  }
  if (!f.client_ca.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(f.client_ca.c_str());
    if (!names || SSL_CTX_load_verify_locations(ctx, f.client_ca.c_str(), nullptr) != 1) {
      if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
      err = "--client-ca-file " + f.client_ca + ": no PEM CA certificate (" + ssl_errors() + ")";
      return nullptr;
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    // asked, not required: a caller may use a bearer token instead; a certificate that does not
    // chain to the CA fails the handshake
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    t->client_certs_ = true;
  }
  return t;
}

Tls::~Tls() {
  if (ctx_) SSL_CTX_free(ctx_);
}

// ASCII out (every other character \u-escaped), and a byte that is no UTF-8 (a client's bytes echoed
// in a message) becomes U+FFFD instead of an exception or a body that is no JSON.
std::string json_text(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

std::string json_error(const std::string& msg) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["error"] = msg;
  return json_text(j);
}

const char* reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 409: return "Conflict";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 507: return "Insufficient Storage";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::string serialize(const Reply& r) {
  std::string h = "HTTP/1.1 " + std::to_string(r.code) + " " + reason(r.code) +
                  "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                  std::to_string(r.body.size()) + "\r\n";
  return h + r.headers + "\r\n" + r.body;
}

Parse parse(const std::string& in, const Limits& L, Request& req, Reply& err) {
  size_t he = in.find("\r\n\r\n");
  size_t le = in.find("\r\n");
#ifdef APTA_FUZZ_MUTANT_HEADER_CRLF
  // Fuzz mutant (never in the daemon): the header section's final CRLF not counted in its limit
  const size_t hl = he + 2;
#else
  const size_t hl = he + 4;
#endif
  if (he == std::string::npos || hl > L.max_header) {
    if (in.size() > L.max_header || (he != std::string::npos && hl > L.max_header))
      return fail(err, 431, "header section over " + std::to_string(L.max_header) + " bytes");
    if (le == std::string::npos) return Parse::Incomplete;
  }
  // request line: METHOD SP origin-form SP HTTP/1.x, nothing else
  std::string line = in.substr(0, le);
  size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
  if (a == std::string::npos || b == std::string::npos || line.find(' ', b + 1) != std::string::npos)
    return fail(err, 400, "malformed request line (want METHOD /path HTTP/1.1)");
  std::string m = line.substr(0, a), t = line.substr(a + 1, b - a - 1), v = line.substr(b + 1);
  if (m.empty() || m.size() > 16 || !std::all_of(m.begin(), m.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
    return fail(err, 400, "malformed request line: bad method");
  if (t.empty() || t[0] != '/' || !std::all_of(t.begin(), t.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
    return fail(err, 400, "malformed request line: bad target");
  if (v != "HTTP/1.1" && v != "HTTP/1.0") return fail(err, 400, "malformed request line: bad version");
  if (he == std::string::npos) return Parse::Incomplete;
  // header lines: token ":" OWS value OWS, no obs-fold, no control characters
  bool have_cl = false, have_auth = false;
  uint64_t cl = 0;
  req.authorization.clear();
  size_t n = 0;
  for (size_t p = le + 2; p < he + 2;) {
    size_t e = in.find("\r\n", p);
    std::string h = in.substr(p, e - p);
    p = e + 2;
    if (++n > L.max_headers) return fail(err, 431, "more than " + std::to_string(L.max_headers) + " header lines");
    size_t c = h.find(':');
    if (c == 0 || c == std::string::npos || !std::all_of(h.begin(), h.begin() + long(c), tchar))
      return fail(err, 400, "malformed header line");
    std::string name = h.substr(0, c), val = h.substr(c + 1);
    for (char ch : val)
      if ((uint8_t(ch) < 0x20 && ch != '\t') || ch == 0x7f) return fail(err, 400, "control character in header " + name);
    val.erase(0, val.find_first_not_of(" \t"));
    val.erase(val.find_last_not_of(" \t") + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](char ch) { return char(tolower(uint8_t(ch))); });
    if (name == "authorization") {
      if (have_auth) return fail(err, 400, "more than one Authorization");
      have_auth = true;
      req.authorization = val;
    }
    if (name == "transfer-encoding") return fail(err, 501, "Transfer-Encoding is not supported: send Content-Length");
    if (name == "content-length") {
      if (have_cl) return fail(err, 400, "more than one Content-Length");
#ifdef APTA_FUZZ_MUTANT_CL_STRTOULL
      // Fuzz mutant (never in the daemon): cpp-httplib 0.11's Content-Length, strtoull ("-1" is
      // 2^64-1, "2abc" is 2).
      cl = strtoull(val.c_str(), nullptr, 10);
#else
      if (val.empty() || !std::all_of(val.begin(), val.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        return fail(err, 400, "Content-Length is not a decimal number of bytes: " + val.substr(0, 32));
      if (val.size() > 18) return fail(err, 400, "Content-Length overflows: " + val.substr(0, 32));
      cl = std::stoull(val);
#endif
      have_cl = true;
      if (cl > L.max_body) return fail(err, 413, "body over " + std::to_string(L.max_body) + " bytes");
    }
  }
  if (in.size() < he + 4 + cl) return Parse::Incomplete;
  req.method = m;
  req.target = t;
  req.body = in.substr(he + 4, cl);
  return Parse::Complete;
}

Server::Server(int listen_fd, const Limits& L, Handler h, std::shared_ptr<Tls> tls)
    : lfd_(listen_fd), efd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), L_(L), h_(std::move(h)), tls_(std::move(tls)) {}

Server::~Server() {
  stop();
  if (efd_ >= 0) close(efd_);
}

void Server::start() { th_ = std::thread([this] { loop(); }); }

void Server::stop() {
  stop_ = true;
  if (th_.joinable()) {
    uint64_t one = 1;
    (void)!write(efd_, &one, sizeof one);
    th_.join();
  }
}

void Server::complete(uint64_t id, Reply r) {
  {
    std::lock_guard<std::mutex> g(mu_);
    done_.emplace_back(id, std::move(r));
  }
  uint64_t one = 1;
  (void)!write(efd_, &one, sizeof one);
}

void Server::answer(Conn& c, const Reply& r, uint64_t now) {
  c.out = serialize(r);
  c.off = 0;
  c.st = Conn::Write;
  c.deadline = now + L_.write_ms;
}

void Server::close_conn(Conn& c) {
  if (c.ssl) SSL_free(c.ssl);
  c.ssl = nullptr;
  close(c.fd);
  c.fd = -1;
}

// What a plain recv/send that returned r < 0 means: -1 not now (try again at the next poll), -2 broken.
ssize_t Server::io_result() {
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
}

// What an SSL_read / SSL_write that returned r <= 0 means: -1 not now (c.want says what to poll
// for: a read may need the socket writable and a write readable), 0 the client's close_notify (a
// read only), -2 broken (EOF without close_notify, a bad record).
ssize_t Server::tls_result(Conn& c, int r, bool reading) {
  switch (SSL_get_error(c.ssl, r)) {
    case SSL_ERROR_WANT_READ: c.want = POLLIN; return -1;
    case SSL_ERROR_WANT_WRITE: c.want = POLLOUT; return -1;
    case SSL_ERROR_ZERO_RETURN: return reading ? 0 : -2;
    default: return -2;
  }
}

// Plain: recv. TLS: SSL_read. OpenSSL writes to the socket with write(): the daemon ignores SIGPIPE.
ssize_t Server::recv_some(Conn& c, char* buf, size_t n) {
  if (!c.ssl) {
    ssize_t r = recv(c.fd, buf, n, MSG_DONTWAIT);
    return r >= 0 ? r : io_result();
  }
  ERR_clear_error();
  int r = SSL_read(c.ssl, buf, int(n));
  if (r > 0) c.want = 0;
  return r > 0 ? r : tls_result(c, r, true);
}

ssize_t Server::send_some(Conn& c, const char* buf, size_t n) {
  if (!c.ssl) {
    ssize_t r = send(c.fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    return r >= 0 ? r : io_result();
  }
  ERR_clear_error();
  int r = SSL_write(c.ssl, buf, int(n));
  if (r > 0) c.want = 0;
  return r > 0 ? r : tls_result(c, r, false);
}

// One non-blocking step of a TLS handshake. The first byte decides what the client speaks: a
// TLS handshake record (0x16) goes to OpenSSL; an upper-case letter is plain HTTP, answered 400
// in plain text (as Go's server does); anything else is closed.
void Server::handshake(Conn& c, bool& drop, uint64_t now) {
  if (!c.sniffed) {
    unsigned char b;
    ssize_t n = recv(c.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) { drop = true; return; }
    if (b != 0x16) {
      SSL_free(c.ssl);
      c.ssl = nullptr;
      if (b >= 'A' && b <= 'Z') answer(c, {400, json_error("this port speaks TLS: use https://")}, now);
      else drop = true;
      return;
    }
    c.sniffed = true;
  }
  ERR_clear_error();
#ifdef APTA_MUTANT_BLOCKING_HANDSHAKE
  // Mutant (never in apta-memd; make -C qemu-cxl/daemon mutant-blocking-handshake): the handshake
  // blocks the HTTP thread until the client completes it, as a naive SSL_accept would
  fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) & ~O_NONBLOCK);
  int r = SSL_do_handshake(c.ssl);
  fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
#else
  int r = SSL_do_handshake(c.ssl);
#endif
  if (r == 1) {
    c.st = Conn::Read;                // the deadline stays: accept to complete request, handshake included
    c.want = 0;
    if (tls_->client_certs())
      if (X509* x = SSL_get1_peer_certificate(c.ssl)) {
        if (SSL_get_verify_result(c.ssl) == X509_V_OK) {
          c.cert_name = subject_entry(X509_get_subject_name(x), NID_commonName);
          c.cert_role = subject_entry(X509_get_subject_name(x), NID_organizationName);
        }
        X509_free(x);
      }
    return;
  }
  switch (SSL_get_error(c.ssl, r)) {
    case SSL_ERROR_WANT_READ: c.want = POLLIN; break;
    case SSL_ERROR_WANT_WRITE: c.want = POLLOUT; break;
    default:
      // a malformed hello, no common version, a refused client certificate: the alert OpenSSL
      // wrote is delivered by a lingering close (closing with the client's request unread would
      // send a reset that can discard it; with TLS 1.3 the client has sent its request already)
      ERR_clear_error();
      SSL_free(c.ssl);
      c.ssl = nullptr;
      shutdown(c.fd, SHUT_WR);
      c.st = Conn::Linger;
      c.want = 0;
      c.deadline = now + 500;
  }
}

void Server::loop() {
  // On a busy host the API yields the CPU to the RTL loop: this thread runs 5 nice levels below
  // the thread that started it (Linux: nice is per thread). TLS handshakes are its main cost.
  errno = 0;
  int prio = getpriority(PRIO_PROCESS, 0);
  if (errno == 0) (void)!setpriority(PRIO_PROCESS, pid_t(gettid()), std::min(prio + 5, 19));
  std::vector<pollfd> p;
  while (!stop_) {
    uint64_t now = now_ms();
    int timeout = 100;
    p.clear();
    p.push_back({lfd_, POLLIN, 0});
    p.push_back({efd_, POLLIN, 0});
    for (const Conn& c : conns_) {
      short ev = 0;
      switch (c.st) {
        case Conn::Handshake: ev = c.want ? c.want : POLLIN; break;
        case Conn::Read: ev = c.want ? c.want : POLLIN; break;
        case Conn::Write: ev = c.want ? c.want : POLLOUT; break;
        case Conn::Linger: ev = POLLIN; break;
        case Conn::Wait: break;
      }
      p.push_back({c.fd, ev, 0});
      timeout = int(std::min<uint64_t>(uint64_t(timeout), c.deadline > now ? c.deadline - now : 0));
    }
    poll(p.data(), p.size(), timeout);
    now = now_ms();
    size_t polled = conns_.size();
    if (p[1].revents & POLLIN) {
      uint64_t v;
      (void)!read(efd_, &v, sizeof v);
      std::vector<std::pair<uint64_t, Reply>> done;
      {
        std::lock_guard<std::mutex> g(mu_);
        done.swap(done_);
      }
      for (auto& d : done)
        for (Conn& c : conns_)
          if (c.id == d.first && c.st == Conn::Wait) { answer(c, d.second, now); break; }
    }
    if (p[0].revents & POLLIN)
      for (int i = 0; i < 64; i++) {
        int fd = accept4(lfd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (conns_.size() >= L_.max_conns) {
          if (!tls_) {                  // (a TLS client could not read a plain answer: just closed)
            std::string o = serialize({503, json_error("too many connections")});
            (void)!send(fd, o.data(), o.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          }
          close(fd);
          continue;
        }
        Conn c{};
        c.fd = fd;
        c.id = next_id_++;
        c.st = tls_ ? Conn::Handshake : Conn::Read;
        c.deadline = now + L_.read_ms;
        if (tls_) {
          c.ssl = SSL_new(tls_->ctx());
          if (!c.ssl || SSL_set_fd(c.ssl, fd) != 1) {
            ERR_clear_error();
            if (c.ssl) SSL_free(c.ssl);
            close(fd);
            continue;
          }
          SSL_set_accept_state(c.ssl);
        }
        conns_.push_back(std::move(c));
      }
    for (size_t i = 0; i < conns_.size();) {
      Conn& c = conns_[i];
      short rev = i < polled ? p[i + 2].revents : 0;
      bool drop = false;
      char buf[4096];
      if (c.st == Conn::Handshake && rev) {
        handshake(c, drop, now);
        if (c.st == Conn::Read) rev = POLLIN;   // the request may follow the handshake at once
      }
      if (c.st == Conn::Read && rev) {
        ssize_t n = -1;
        bool eof = false;
        while (c.in.size() <= L_.max_header + L_.max_body && (n = recv_some(c, buf, sizeof buf)) != 0) {
          if (n < 0) { eof = n == -2; break; }
          c.in.append(buf, size_t(n));
        }
        if (n == 0) eof = true;
        Request req;
        Reply rep{0, ""};
        Parse r = parse(c.in, L_, req, rep);
        if (r == Parse::Complete) {
          c.in.clear();
          req.cert_name = c.cert_name;
          req.cert_role = c.cert_role;
          if (h_(c.id, req, rep)) answer(c, rep, now);
          else { c.st = Conn::Wait; c.deadline = now + L_.answer_ms; }
        } else if (r == Parse::Error) {
          answer(c, rep, now);
        } else if (eof) {
          drop = true;                  // the client gave up before its request was complete
        }
      }
      if (!drop && c.st == Conn::Write && (rev || c.off == 0)) {
        while (c.off < c.out.size()) {
          ssize_t n = send_some(c, c.out.data() + c.off, c.out.size() - c.off);
          if (n < 0) { drop = n == -2; break; }
          c.off += size_t(n);
        }
        if (!drop && c.off == c.out.size()) {
          // lingering close: read what the client still sends (a body we refused) until its EOF,
          // so the kernel does not reset the connection before the client has read the answer.
          // TLS: close_notify first (best effort, one try), then the bytes are drained undecrypted.
          if (c.ssl) { ERR_clear_error(); SSL_shutdown(c.ssl); ERR_clear_error(); }
          shutdown(c.fd, SHUT_WR);
          c.st = Conn::Linger;
          c.deadline = now + 500;
          rev = 0;
        }
      }
      if (c.st == Conn::Linger && (rev & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n;
        while ((n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {}
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) drop = true;
      }
      if (!drop && now >= c.deadline) {
        if (c.st == Conn::Read) answer(c, {408, json_error("request not complete within " + std::to_string(L_.read_ms) + " ms")}, now);
        else if (c.st == Conn::Wait) answer(c, {503, json_error("no answer from the RTL loop")}, now);
        else drop = true;               // a handshake not done within read_ms (no session to answer
                                        // in), an answer not taken within write_ms, or the linger is over
      }
      if (drop) close_conn(c);
      i++;
    }
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const Conn& c) { return c.fd < 0; }), conns_.end());
  }
  for (Conn& c : conns_) close_conn(c);
  conns_.clear();
}

}  // namespace apta_http
