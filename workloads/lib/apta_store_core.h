/* apta_store_core.h: the backend-neutral half of apta_store.h, shared by every store backend.
 *
 * The core owns what a store promises independently of where objects live: the declared
 * inputs/outputs/external inputs/external outputs of the invocation and their checks (an
 * undeclared object, a put before every input was read, a get after the GET phase, a declared
 * object never read or written), the phase marks (apta_phase / apta_object_mark, apta_store.h),
 * the parameters and the instance, and the per-function stats JSON object. A backend supplies
 * the four data operations; the core calls them only after its checks passed, and marks the
 * object ranges itself.
 *
 * Backends: lib/apta_store_host.c (files in a directory, main() of every host function binary)
 * and qemu-cxl/guest/apta_store_cxl.c (objects over the CXL guest library, used by the runner
 * qemu-cxl/guest/aptarun.c, which runs many functions in one process).
 *
 * Errors go through apta_die() (apta_util.h): the host exits with status 3; the runner installs
 * apta_die_handler and ends the job instead. */
#ifndef APTA_STORE_CORE_H
#define APTA_STORE_CORE_H

#include <stddef.h>

#include "apta_store.h"

#ifdef __cplusplus
extern "C" {
#endif

enum apta_decl_kind { APTA_DECL_GET, APTA_DECL_PUT, APTA_DECL_INPUT, APTA_DECL_EMIT, APTA_DECL_KINDS };

typedef struct apta_backend {
  apta_bytes (*get)(const char *name);                              /* 64-byte aligned, zero byte after len */
  void (*put)(const char *name, const void *data, size_t len);
  apta_bytes (*input)(const char *name);
  void (*emit)(const char *name, const void *data, size_t len);
} apta_backend;

/* A fresh invocation: forgets every declaration, parameter, phase and byte count. `function`
 * names the function in messages (the pointer is kept). */
void apta_core_begin(const apta_backend *be, const char *function);
void apta_core_set_function(const char *function);
const char *apta_core_function(void);
/* Declare an object (`flag` names the option/directive in the "too many" error). Pointers kept. */
void apta_core_declare(int kind, const char *name, const char *flag);
/* Parameter key=value (pointers kept; a later one overrides an earlier one with the same key). */
void apta_core_param(const char *key, const char *value);
void apta_core_instance(int instance, int instances);

/* Run fn between the phase marks, then check that every declared input was read, every output
 * written and every external output emitted (apta_die otherwise, naming them). Writes the stats
 * JSON object (no newline) into out: function, instance, get_s, compute_s, put_s, the bytes, and
 * maxrss_kb (the process's VmHWM, -1 if unknown). */
void apta_core_run(int (*fn)(void), char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* APTA_STORE_CORE_H */
