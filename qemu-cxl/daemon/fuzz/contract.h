// The daemon's libFuzzer targets (README.md "Fuzzing"): a broken contract aborts with what broke,
// so libFuzzer keeps the input as a crash file like any sanitizer report.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

[[noreturn]] inline void violated(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "contract violated: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

#define REQUIRE(cond, ...) \
  do {                     \
    if (!(cond)) violated(__VA_ARGS__); \
  } while (0)

// A printable excerpt of bytes for a message.
inline std::string excerpt(const std::string& s, size_t n = 80) {
  std::string o;
  for (char c : s.substr(0, n)) {
    if (c >= 0x20 && c < 0x7f) o += c;
    else { char b[8]; snprintf(b, sizeof b, "\\x%02x", (unsigned char)c); o += b; }
  }
  return o + (s.size() > n ? "..." : "");
}
