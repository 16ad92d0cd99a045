/* apta guest probe: maps the guest's CXL memory through /dev/mem, writes its pattern into its own
 * control block and checks nobody else writes there.
 *
 * Built static on the host (gcc -static -O2 -Ibuild/qemu-cxl) by qemu-cxl/launch.py into
 * build/qemu-cxl/probe and put into the per-run cpio that launch.py appends to the initramfs.
 *
 *   probe run   <guest g> <guests n> [seconds]   write g's pattern and beat; report another guest's
 *   probe bench <bytes>                         write/read speed of the guest's memory past the layout
 *
 * The region address and size come from APTA_REGION_ADDR / APTA_REGION_SIZE (set by /init): the
 * guest's own device, backed by its own file (RINGS.md). The control block is at APTA_GUEST_AREA
 * (apta_layout.h): u64 heartbeat (monotonic ns), u32 epoch, u32 state (0 down, 1 booting, 2 joined).
 * The probe's pattern lives in the control block's bytes 16..47, which RINGS.md leaves unused:
 *   +16 u64 magic "APTAPRB1", +24 u64 guest index, +32 u64 boot number, +40 u64 beat counter.
 * Every beat reads the pattern back: an index or boot that is not its own means another guest
 * writes the same memory (`PROBE OTHER`), which only a shared backing (launch.py shared_with) allows.
 * It is a plumbing test only and must not run while the memory-server daemon serves the guests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "apta_layout.h"

#define MAGIC 0x3142525041545041ull /* "APTAPRB1" little-endian */

struct ctl {
    volatile uint64_t heartbeat;
    volatile uint32_t epoch;
    volatile uint32_t state;
    volatile uint64_t magic;
    volatile uint64_t index;
    volatile uint64_t boot;
    volatile uint64_t counter;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint8_t *map_region(uint64_t *size_out) {
    /* APTA_MAP_PATH (e.g. /dev/dax0.0) + APTA_MAP_SIZE map a device from offset 0 instead of /dev/mem */
    const char *path = getenv("APTA_MAP_PATH") ? getenv("APTA_MAP_PATH") : "/dev/mem";
    const char *a = getenv("APTA_MAP_PATH") ? "0" : getenv("APTA_REGION_ADDR");
    const char *s = getenv("APTA_MAP_PATH") ? getenv("APTA_MAP_SIZE") : getenv("APTA_REGION_SIZE");
    if (!a || !s) { fprintf(stderr, "PROBE FAIL no APTA_REGION_ADDR/SIZE\n"); exit(2); }
    uint64_t addr = strtoull(a, 0, 0), size = strtoull(s, 0, 0);
    /* APTA_MAP_CACHED=1: open without O_SYNC (the kernel then picks the mapping's memory type) */
    int cached = getenv("APTA_MAP_CACHED") && !strcmp(getenv("APTA_MAP_CACHED"), "1");
    int fd = open(path, O_RDWR | (cached ? 0 : O_SYNC));
    if (fd < 0) { fprintf(stderr, "PROBE FAIL open %s: %s\n", path, strerror(errno)); exit(2); }
    void *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)addr);
    if (p == MAP_FAILED) { fprintf(stderr, "PROBE FAIL mmap %#llx+%llu: %s\n", (unsigned long long)addr,
                                   (unsigned long long)size, strerror(errno)); exit(2); }
    *size_out = size;
    printf("PROBE MAPPED addr=%#llx size=%llu\n", (unsigned long long)addr, (unsigned long long)size);
    fflush(stdout);
    return p;
}


static int cmd_run(unsigned g, unsigned n, unsigned seconds) {
    uint64_t size;
    volatile uint8_t *r = map_region(&size);
    if (g >= n || APTA_GUEST_FILE_BYTES > size) { fprintf(stderr, "PROBE FAIL bad g/n or size\n"); return 2; }
    const char *b = getenv("APTA_BOOT");
    uint64_t boot = b ? strtoull(b, 0, 0) : 0;
    struct ctl *me = (struct ctl *)(r + APTA_GUEST_AREA);
    me->state = 1;
    me->magic = MAGIC;
    me->index = g;
    me->boot = boot;
    me->counter = 0;
    me->heartbeat = now_ns();
    __sync_synchronize();
    me->state = 2;
    printf("PROBE WROTE g=%u boot=%llu\n", g, (unsigned long long)boot);
    fflush(stdout);
    uint64_t t_end = seconds ? now_ns() + (uint64_t)seconds * 1000000000ull : 0, others = 0;
    for (uint64_t k = 1;; k++) {
        uint64_t idx = me->index, ob = me->boot, ctr = me->counter;
        if (me->magic != MAGIC || idx != g || ob != boot || ctr != k - 1) {
            /* someone else wrote our control block: the memory is shared (printed the first times) */
            if (others++ < 3)
                printf("PROBE OTHER g=%u saw index=%llu boot=%llu counter=%llu\n", g, (unsigned long long)idx,
                       (unsigned long long)ob, (unsigned long long)ctr);
            me->magic = MAGIC, me->index = g, me->boot = boot;
        }
        uint64_t t = now_ns();
        me->heartbeat = t;
        me->counter = k;
        if (k == 200) printf("PROBE ALONE g=%u n=%u boot=%llu others=%llu\n", g, n, (unsigned long long)boot,
                             (unsigned long long)others);
        if (t_end && t > t_end) break;
        usleep(10000);
    }
    printf("PROBE DONE g=%u others=%llu\n", g, (unsigned long long)others);
    return 0;
}

static double secs(uint64_t a, uint64_t b) { return (double)(b - a) / 1e9; }

static int cmd_bench(uint64_t bytes) {
    uint64_t size;
    volatile uint8_t *r = map_region(&size);
    /* past what RINGS.md uses of the guest's file: the guest's own, nobody reads it */
    if (APTA_GUEST_FILE_BYTES + bytes > size) bytes = size - APTA_GUEST_FILE_BYTES;
    volatile uint64_t *p = (volatile uint64_t *)(r + APTA_GUEST_FILE_BYTES);
    uint64_t words = bytes / 8, sum = 0;
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < words; i++) p[i] = i * 0x9E3779B97F4A7C15ull;
    uint64_t t1 = now_ns();
    for (uint64_t i = 0; i < words; i++) sum += p[i];
    uint64_t t2 = now_ns();
    uint64_t bad = 0;
    for (uint64_t i = 0; i < words; i++) bad += p[i] != i * 0x9E3779B97F4A7C15ull;
    printf("PROBE BENCH bytes=%llu write_MiBps=%.1f read_MiBps=%.1f bad=%llu sum=%llx\n",
           (unsigned long long)bytes, bytes / 1048576.0 / secs(t0, t1), bytes / 1048576.0 / secs(t1, t2),
           (unsigned long long)bad, (unsigned long long)sum);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IOLBF, 0);
    if (argc >= 4 && !strcmp(argv[1], "run"))
        return cmd_run((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]), argc > 4 ? (unsigned)atoi(argv[4]) : 0);
    if (argc >= 3 && !strcmp(argv[1], "bench"))
        return cmd_bench(strtoull(argv[2], 0, 0));
    fprintf(stderr, "usage: probe run <g> <n> [seconds] | probe bench <bytes>\n");
    return 2;
}
