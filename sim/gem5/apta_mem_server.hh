// The memory server's object data path in gem5: objects laid out one after another in its DRAM
// (a gem5 DDR4-2400 controller behind `port`), each get, put drain or CXL line access a batch of
// line reads or writes at the memory-server clock. In CXL cached its coherence agent sends
// back-invalidation snoops, one port per compute server's link. The protocol engine itself (OTC/OIC,
// sim/src/directory.cpp) runs inside the shared system (sim/src/system.cpp); `replayVectors`
// checks that engine, as compiled into this gem5 binary, against the model checker's vectors.
#ifndef APTA_GEM5_APTA_MEM_SERVER_HH
#define APTA_GEM5_APTA_MEM_SERVER_HH

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "line_port.hh"
#include "params/AptaMemServer.hh"
#include "sim/clocked_object.hh"

namespace gem5
{

class AptaMemServer : public ClockedObject
{
  public:
    PARAMS(AptaMemServer);
    explicit AptaMemServer(const Params &p);

    Port &getPort(const std::string &if_name, PortID idx = InvalidPortID) override;
    void init() override;

    // Place objects of these sizes (bytes, by object id); the redo-log area follows them.
    void layout(const std::vector<uint64_t> &objectBytes);
    // Lines [firstLine, firstLine + n) of object obj (or ::apta::kRedoLog); done(first, last).
    void access(uint32_t obj, uint64_t firstLine, uint64_t n, bool write,
                std::function<void(Tick, Tick)> done);
    // The address of line `line` of object obj (or ::apta::kRedoLog) in the memory server's
    // memory, which the compute servers reach as their CXL window.
    Addr lineAddr(uint32_t obj, uint64_t line) const;
    // BISnp (a CleanInvalidReq to the point of coherence) for lines [0, n) of object obj, sent to
    // compute server x over its link; done() when every BIRsp is back.
    void backInvalidate(int x, uint32_t obj, uint64_t n, std::function<void()> done);

    // The model checker's vectors through the engine compiled into this binary: a JSON line
    // {"vectors", "mutant", "scenarios", "steps", "failed"} (exported to the config script).
    std::string replayVectors(const std::string &path, const std::string &mutant);

  private:
    AptaLinePort port;
    std::vector<std::unique_ptr<AptaLinePort>> bisnpPorts;  // per compute server
    const unsigned lineBytes;
    const Addr memBase, memSize;
    const bool dropBisnp;  // the drop_bisnp mutant
    std::vector<Addr> base;  // object id -> first byte; back() is the redo-log area
};

} // namespace gem5

#endif // APTA_GEM5_APTA_MEM_SERVER_HH
