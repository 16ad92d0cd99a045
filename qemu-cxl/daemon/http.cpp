// The daemon's HTTP/1.1 server: see http.h.
#include "http.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

}  // namespace

std::string json_error(const std::string& msg) {
  std::string o = "{\"error\":\"";
  for (char c : msg) {
    if (c == '"' || c == '\\') o += '\\';
    if (uint8_t(c) < 0x20 || uint8_t(c) >= 0x7f) { char b[8]; snprintf(b, sizeof b, "\\u%04x", uint8_t(c)); o += b; continue; }
    o += c;
  }
  return o + "\"}";
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
    case 431: return "Request Header Fields Too Large";
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

Server::Server(int listen_fd, const Limits& L, Handler h)
    : lfd_(listen_fd), efd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), L_(L), h_(std::move(h)) {}

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

void Server::loop() {
  std::vector<pollfd> p;
  while (!stop_) {
    uint64_t now = now_ms();
    int timeout = 100;
    p.clear();
    p.push_back({lfd_, POLLIN, 0});
    p.push_back({efd_, POLLIN, 0});
    for (const Conn& c : conns_) {
      short ev = c.st == Conn::Read || c.st == Conn::Linger ? POLLIN : c.st == Conn::Write ? POLLOUT : 0;
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
          std::string o = serialize({503, json_error("too many connections")});
          (void)!send(fd, o.data(), o.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          close(fd);
          continue;
        }
        conns_.push_back({fd, next_id_++, Conn::Read, now + L_.read_ms, {}, {}, 0});
      }
    for (size_t i = 0; i < conns_.size();) {
      Conn& c = conns_[i];
      short rev = i < polled ? p[i + 2].revents : 0;
      bool drop = false;
      char buf[4096];
      if (c.st == Conn::Read && (rev & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n = -1;
        bool eof = false;
        while (c.in.size() <= L_.max_header + L_.max_body && (n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT)) != 0) {
          if (n < 0) { eof = errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR; break; }
          c.in.append(buf, size_t(n));
        }
        if (n == 0) eof = true;
        Request req;
        Reply rep{0, ""};
        Parse r = parse(c.in, L_, req, rep);
        if (r == Parse::Complete) {
          c.in.clear();
          if (h_(c.id, req, rep)) answer(c, rep, now);
          else { c.st = Conn::Wait; c.deadline = now + L_.answer_ms; }
        } else if (r == Parse::Error) {
          answer(c, rep, now);
        } else if (eof) {
          drop = true;                  // the client gave up before its request was complete
        }
      }
      if (c.st == Conn::Write && (rev & (POLLOUT | POLLHUP | POLLERR) || c.off == 0)) {
        while (c.off < c.out.size()) {
          ssize_t n = send(c.fd, c.out.data() + c.off, c.out.size() - c.off, MSG_NOSIGNAL | MSG_DONTWAIT);
          if (n <= 0) { if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) drop = true; break; }
          c.off += size_t(n);
        }
        if (!drop && c.off == c.out.size()) {
          // lingering close: read what the client still sends (a body we refused) until its EOF,
          // so the kernel does not reset the connection before the client has read the answer
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
        else drop = true;               // an answer not taken within write_ms, or the linger is over
      }
      if (drop) { close(c.fd); c.fd = -1; }
      i++;
    }
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const Conn& c) { return c.fd < 0; }), conns_.end());
  }
  for (Conn& c : conns_) close(c.fd);
  conns_.clear();
}

}  // namespace apta_http
