/* apta_store.h: the object-store API every FaaS function of workloads/ uses.
 *
 * A function reads whole objects with apta_get() and writes whole objects with apta_put(), as in
 * the paper (§II-A: obj <- get(objID) at the beginning, put(objID, obj) at the end). Objects are
 * named byte strings; a put replaces the whole object atomically.
 *
 * Implementations behind this header (link exactly one):
 *   lib/apta_store_host.c  host store: one file per object in a directory (workloads/run.py);
 *   later: the tracer's store and the CXL guest library (qemu-cxl/), same header.
 *
 * Phases. The library brackets the function's execution into GET -> COMPUTE -> PUT -> END from the
 * function's declared inputs and outputs (the workflow file): the GET phase starts at the first
 * apta_get, COMPUTE starts when the last declared input has been read, PUT starts at the first
 * apta_put and END follows the last declared output. At each transition it calls apta_phase(),
 * and for each object apta_object_mark() with the object's address range. Both are Valgrind client
 * requests when <valgrind/valgrind.h> is available (a handful of no-op instructions natively, a
 * request a Valgrind tool answers under the tracer) and otherwise a call to an empty non-inlined
 * function a tool can find by symbol name. A function therefore never marks phases itself; it must
 * read all of its inputs before computing and write its outputs at the end (checked).
 *
 * Besides the store, a function may read external inputs (a market-data feed, an uploaded stream:
 * data that does not come from the object store, so not a get) with apta_input(), and write
 * external outputs (a notification topic, a database) with apta_emit(). Neither is a store
 * operation; both are declared in the workflow file too.
 */
#ifndef APTA_STORE_H
#define APTA_STORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An object's bytes. The library owns the memory until the process ends; data is 64-byte aligned,
 * and len may be 0. */
typedef struct {
  const uint8_t *data;
  size_t len;
} apta_bytes;

/* Read a whole object. Aborts the function (exit status 3) if the object does not exist or was not
 * declared as an input of this function in the workflow file. */
apta_bytes apta_get(const char *name);

/* Write a whole object (atomically replaces the previous version). Aborts if not declared. */
void apta_put(const char *name, const void *data, size_t len);

/* External input / output (not store operations, see above). */
apta_bytes apta_input(const char *name);
void apta_emit(const char *name, const void *data, size_t len);

/* The invocation: which instance of a parallel function this is, and the function's parameters
 * (workflow file "params" merged with the size's generator parameters; absent -> def). */
int apta_instance(void);
int apta_instances(void);
long apta_param_long(const char *key, long def);
double apta_param_double(const char *key, double def);

/* Each function source defines this; the library's main() calls it between the phase markers. */
int apta_function(void);

/* ---- phase hook ---------------------------------------------------------------------------- */
enum apta_phase_id {
  APTA_PHASE_GET = 1,
  APTA_PHASE_COMPUTE = 2,
  APTA_PHASE_PUT = 3,
  APTA_PHASE_END = 4,
};
enum apta_object_kind { APTA_OBJ_GET = 1, APTA_OBJ_PUT = 2 };

/* Valgrind client request codes of the tracer tool: VG_USERREQ_TOOL_BASE('A','P') + n. */
#define APTA_VG_BASE ((unsigned)(('A' & 0xff) << 24 | ('P' & 0xff) << 16))
#define APTA_VG_PHASE (APTA_VG_BASE + 1)  /* args: phase id, function name */
#define APTA_VG_OBJECT (APTA_VG_BASE + 2) /* args: kind, object name, address, length */
#define APTA_VG_IO (APTA_VG_BASE + 3)     /* args: 1 = the store's own I/O begins, 0 = it ends */

#if !defined(APTA_NO_VALGRIND) && defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define APTA_HAVE_VALGRIND_REQUESTS 1
#endif
#endif

/* Weak, empty, never inlined: the fallback hook points (symbol names apta_phase_hook and
 * apta_object_hook) for a tool that intercepts functions by name. */
void apta_phase_hook(int phase, const char *function);
void apta_object_hook(int kind, const char *name, const void *addr, size_t len);
void apta_io_hook(int on);

static inline void apta_phase(int phase, const char *function) {
#ifdef APTA_HAVE_VALGRIND_REQUESTS
  VALGRIND_DO_CLIENT_REQUEST_STMT(APTA_VG_PHASE, phase, function, 0, 0, 0);
#else
  apta_phase_hook(phase, function);
#endif
}

static inline void apta_object_mark(int kind, const char *name, const void *addr, size_t len) {
#ifdef APTA_HAVE_VALGRIND_REQUESTS
  VALGRIND_DO_CLIENT_REQUEST_STMT(APTA_VG_OBJECT, kind, name, addr, len, 0);
#else
  apta_object_hook(kind, name, addr, len);
#endif
}

/* Brackets an implementation's own I/O (the host store's file reads and writes behind get, put,
 * input and emit): a tracer leaves it out of the trace, because it is an artifact of the host store,
 * not work of the function. Instead the tracer synthesizes the store traffic from the object ranges
 * (apta_object_mark): the GET phase reads every line of a got object, the PUT phase writes every
 * line of a put object. */
static inline void apta_io(int on) {
#ifdef APTA_HAVE_VALGRIND_REQUESTS
  VALGRIND_DO_CLIENT_REQUEST_STMT(APTA_VG_IO, on, 0, 0, 0, 0);
#else
  apta_io_hook(on);
#endif
}

#ifdef __cplusplus
}
#endif
#endif /* APTA_STORE_H */
