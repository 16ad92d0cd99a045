// The daemon's command line: CLI11 finds the options and their values (as given, strings), then
// every value is checked here, strictly, before anything is opened (options.h). A lax parse turned
// `--lease-ms abc` into 0 (every guest fenced at once) and `--port 7660x` into 7660.
#include "options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace apta_memd {
namespace {

// A refused command line: the stderr line after "apta-memd: ".
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string in_quotes(const std::string& v) { return "\"" + v + "\""; }

[[noreturn]] void refuse(const std::string& opt, const std::string& v, const std::string& why) {
  throw Refused(opt + ": " + in_quotes(v) + " " + why);
}

// Decimal digits only (no sign, space, 0x or exponent), lo..hi.
uint64_t want_uint(const char* opt, const std::string& v, uint64_t lo, uint64_t hi) {
  bool digits = !v.empty();
  for (char c : v) digits = digits && c >= '0' && c <= '9';
  if (!digits) refuse(opt, v, lo ? "is not a positive integer" : "is not a non-negative integer");
  errno = 0;
  unsigned long long x = strtoull(v.c_str(), nullptr, 10);
  if (errno != ERANGE && x == 0 && lo >= 1) refuse(opt, v, "is not a positive integer");
  if (errno == ERANGE || x < lo || x > hi)
    refuse(opt, v, "is out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return x;
}

// A plain decimal number (digits, an optional fraction and exponent: no sign, nan, inf or hex), lo..hi.
double want_number(const char* opt, const std::string& v, double lo, const char* lo_s, double hi, const char* hi_s) {
  size_t i = 0, digits = 0;
  auto run = [&] { size_t n = 0; while (i < v.size() && v[i] >= '0' && v[i] <= '9') i++, n++; return n; };
  digits += run();
  if (i < v.size() && v[i] == '.') i++, digits += run();
  bool ok = digits > 0;
  if (ok && i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    i++;
    if (i < v.size() && (v[i] == '+' || v[i] == '-')) i++;
    ok = run() > 0;
  }
  double x = ok && i == v.size() ? strtod(v.c_str(), nullptr) : -1;
  if (!(x >= lo && x <= hi)) refuse(opt, v, std::string("is not a number in ") + lo_s + ".." + hi_s);
  return x;
}

std::string want_path(const char* opt, const std::string& v) {
  if (v.empty()) refuse(opt, v, "is not a path");
  return v;
}

// A printf pattern with exactly one conversion, %u (the guest index): it goes to snprintf.
std::string want_pattern(const char* opt, const std::string& v) {
  size_t p = v.find('%');
  if (p == std::string::npos || v.compare(p, 2, "%u") != 0 || v.find('%', p + 1) != std::string::npos)
    throw Refused(std::string(opt) + ": the pattern needs exactly one %u (the guest index), got " + in_quotes(v));
  return v;
}

// One name per compute server: the API's path segment and the Go plugin's node name, so DNS-like
// characters only, none empty, none twice (the API would only ever find the first).
std::vector<std::string> want_names(const char* opt, const std::string& v, unsigned servers) {
  std::vector<std::string> names;
  for (size_t p = 0;;) {
    size_t q = v.find(',', p);
    names.push_back(v.substr(p, q == std::string::npos ? q : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (names.size() != servers)
    refuse(opt, v, "names " + std::to_string(names.size()) + " servers, want " + std::to_string(servers) +
                       " (one per guest, comma-separated)");
  std::set<std::string> seen;
  for (const std::string& n : names) {
    if (n.empty()) refuse(opt, v, "has an empty name");
    bool ok = n.size() <= 253;
    for (char c : n) ok = ok && (isalnum(uint8_t(c)) || c == '.' || c == '_' || c == '-');
    if (!ok) refuse(opt, v, "has " + in_quotes(n) + ", not a name (letters, digits, '.', '_', '-'; at most 253)");
    if (!seen.insert(n).second) refuse(opt, v, "names " + n + " twice");
  }
  return names;
}

}  // namespace

int parse_options(int argc, char** argv, unsigned servers, Options& o) {
  CLI::App app{"apta-memd: the memory-server daemon of the CXL emulation (qemu-cxl/daemon/README.md)", "apta-memd"};
  app.get_formatter()->column_width(34);
  // Every value is taken as a string and checked below, so a bad one is refused with its text.
  std::map<std::string, std::string> val;
  std::vector<CLI::Option*> valued;
  auto opt = [&](const char* name, const char* type, const std::string& help) {
    valued.push_back(app.add_option(name, val[name], help)->type_name(type));
  };
  bool init = false, stats = false, trace = false;
  auto flag = [&](const char* name, bool& b, const char* help) { app.add_flag(name, b, help)->disable_flag_override(); };
  opt("--file", "SERVER", "the daemon's private server file: header + data area (qemu-cxl/RINGS.md); required");
  opt("--guest-file", "PATTERN",
      std::string("guest g's file, %u = g (default: ") + APTA_GUEST_FILE_FMT + " next to SERVER)");
  flag("--init", init, "write fresh headers and zero the guest areas (else the server's header must be valid)");
  opt("--slots", "S", "ring slots, with --init (a power of two, default " + std::to_string(APTA_DEFAULT_SLOTS) +
                          ", at most " + std::to_string(APTA_MAX_SLOTS) + ")");
  opt("--port", "P", "control-plane API on 127.0.0.1:P, 1..65535 (schema/controlplane.yaml); none without it");
  opt("--token-file", "F", "bearer tokens, token,name,role[,server] per line: 401 without one, 403 for a wrong role");
  opt("--tls-cert-file", "F", "serve the API over TLS (1.2+) with this PEM certificate (with --tls-private-key-file)");
  opt("--tls-private-key-file", "K", "the certificate's PEM key");
  opt("--client-ca-file", "F", "with TLS: a client certificate chaining to this CA names a caller (CN) and its role (O)");
  opt("--lease-ms", "MS", "heartbeat lease before a guest is fenced, 1.." + std::to_string(kMaxLeaseMs) +
                              " (default " + std::to_string(APTA_LEASE_MS) + ")");
  opt("--rejoin-rate", "R", "rejoins per server and second, ring and API together (default 1; 0: no limit, at most 1e6)");
  opt("--rejoin-burst", "B", "the rejoin bucket's size, 1..1e6 (default 16); over it a ring Rejoin waits, the API 429");
  opt("--names", "LIST", "compute-server names of the API, one per guest (default cs0,cs1,...)");
  flag("--stats", stats, "print cycles/s and requests/s at exit");
  flag("--trace", trace, "one stderr line per flit in and out (debugging)");
  opt("--trace-log", "F", "the event log of trace validation (apta-memd-trace only: spec/tla/README.md)");
  opt("--qemu-pidfile", "PATTERN", "guest g's QEMU -pidfile, %u = g: fence at once when that process exits");
  opt("--mutant", "NAME", "commit-waits-for-acks: a deliberate bug for negative controls (PutCommit held while others owe acks)");

  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      fputs(app.help().c_str(), stdout);
      return 0;
    } catch (const CLI::ExtrasError&) {
      std::string first = app.remaining().empty() ? "?" : app.remaining().front();
      throw Refused(first.size() > 1 && first[0] == '-' ? "unknown option " + first + " (apta-memd --help lists them)"
                                                        : "unexpected argument " + in_quotes(first));
    } catch (const CLI::ArgumentMismatch& e) {
      for (CLI::Option* op : valued)      // the one policy that applies to every option: once
        if (op->count() > 1) {
          std::string vs;
          for (const std::string& r : op->results()) vs += (vs.empty() ? "" : ", ") + in_quotes(r);
          throw Refused(op->get_name() + " given " + std::to_string(op->count()) + " times (" + vs + "): once only");
        }
      std::string what = e.what(), name = what.substr(0, what.find(':'));
      if (what.find("disallowed flag override") != std::string::npos)
        throw Refused("--" + what.substr(0, what.find(' ')) + " takes no value");
      throw Refused(name.rfind("--", 0) == 0 ? name + " needs a value" : what);
    } catch (const CLI::ParseError& e) {
      throw Refused(e.what());
    }
    auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
    // CLI11 takes the word after an option as its value even when that word is an option
    for (CLI::Option* op : valued) {
      const std::string& v = val[op->get_name()];
      if (op->count() && v.rfind("--", 0) == 0 && (v == "--help" || app.get_option_no_throw(v.substr(0, v.find('=')))))
        throw Refused(op->get_name() + " needs a value (got the option " + v + ")");
    }
    if (!given("--file")) throw Refused("--file is required (the server file; apta-memd --help lists the options)");
    o.file = want_path("--file", val["--file"]);
    if (given("--guest-file")) o.guest_file = want_pattern("--guest-file", val["--guest-file"]);
    o.init = init, o.stats = stats, o.trace = trace;
    if (given("--slots")) {
      const std::string& v = val["--slots"];
      o.slots = uint32_t(want_uint("--slots", v, 1, APTA_MAX_SLOTS));
      if (o.slots & (o.slots - 1)) refuse("--slots", v, "is not a power of two (1.." + std::to_string(APTA_MAX_SLOTS) + ")");
      if (!init) refuse("--slots", v, "needs --init (a resumed rack keeps the ring size in its header)");
    }
    if (given("--port")) o.port = int(want_uint("--port", val["--port"], 1, 65535));
    if (given("--token-file")) o.token_file = want_path("--token-file", val["--token-file"]);
    if (given("--tls-cert-file")) o.tls.cert = want_path("--tls-cert-file", val["--tls-cert-file"]);
    if (given("--tls-private-key-file")) o.tls.key = want_path("--tls-private-key-file", val["--tls-private-key-file"]);
    if (given("--client-ca-file")) o.tls.client_ca = want_path("--client-ca-file", val["--client-ca-file"]);
    if (given("--lease-ms")) o.lease_ms = want_uint("--lease-ms", val["--lease-ms"], 1, kMaxLeaseMs);
    if (given("--rejoin-rate")) o.rejoin_rate = want_number("--rejoin-rate", val["--rejoin-rate"], 0, "0", 1e6, "1e6");
    if (given("--rejoin-burst")) o.rejoin_burst = want_number("--rejoin-burst", val["--rejoin-burst"], 1, "1", 1e6, "1e6");
    if (given("--names")) o.names = want_names("--names", val["--names"], servers);
    else for (unsigned g = 0; g < servers; g++) o.names.push_back("cs" + std::to_string(g));
    if (given("--trace-log")) o.trace_log = want_path("--trace-log", val["--trace-log"]);
    if (given("--qemu-pidfile")) o.pidfile = want_pattern("--qemu-pidfile", val["--qemu-pidfile"]);
    if (given("--mutant") && !set_mutant("--mutant", val["--mutant"], o))
      refuse("--mutant", val["--mutant"], "is not a mutant (want commit-waits-for-acks)");
    // options that need another
    if (!o.token_file.empty() && !o.port) throw Refused("--token-file needs --port");
    if ((!o.tls.cert.empty() || !o.tls.key.empty() || !o.tls.client_ca.empty()) && !o.port)
      throw Refused("TLS options need --port");
    if (o.tls.cert.empty() && !o.tls.client_ca.empty()) throw Refused("--client-ca-file needs --tls-cert-file");
#ifndef APTA_MEMD_TRACE_PROBE
    if (!o.trace_log.empty())
      throw Refused("--trace-log needs the core's result queue: use apta-memd-trace (make -C qemu-cxl/daemon trace)");
#endif
  } catch (const Refused& r) {
    fprintf(stderr, "apta-memd: %s\n", r.what());
    return 2;
  }
  return -1;
}

}  // namespace apta_memd
