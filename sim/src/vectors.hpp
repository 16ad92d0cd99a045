// `apta-sim --replay-vectors`: drive the simulator's protocol engine (directory.hpp) with the
// model checker's vectors (rtl/CORE.md "Test vectors") and compare every step's messages and
// directory/OIC state. Returns the number of failing scenarios; reports each on `err`.
#pragma once
#include <ostream>
#include <string>

#include "directory.hpp"

namespace apta {
struct ReplayStats { int scenarios = 0, failed = 0, steps = 0; };
ReplayStats replay_vectors(const std::string& path, Mutant m, std::ostream& err);
}
