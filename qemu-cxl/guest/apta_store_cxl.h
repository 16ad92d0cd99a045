/* apta_store_cxl.h: the CXL backend of the workloads' store (workloads/lib/apta_store_core.h):
 * get/put over the guest library (aptacxl) in the object format of qemu-cxl/JOBS.md, external
 * inputs from the job's inputs area, external outputs into its emits area, and the job's log
 * (history events get/get_ret/put/put_ack, put_us, emit). The runner (aptarun.c) fills a job and
 * calls apta_cxl_begin before running the function, apta_cxl_end after (success or failure). */
#ifndef APTA_STORE_CXL_H
#define APTA_STORE_CXL_H

#include <stddef.h>
#include <stdint.h>

#include "aptacxl.h"

#define APTA_CXL_MAXDECL 64

typedef struct {
  const char *name;
  uint32_t obj, lines; /* get/put: CXL object and its map entry's lines */
  uint64_t off, len;   /* input: bytes at off of the inputs area */
  uint64_t version;    /* get: the version it needs (its producer's commit; 0: any, an unversioned get) */
} apta_cxl_decl;

typedef struct apta_cxl_job {
  acx *c;
  volatile uint8_t *block; /* this guest's job block in the region */
  const char *run;         /* the run id (history: run, put version, ids <run>/g<k>, <run>/p<k>) */
  apta_cxl_decl gets[APTA_CXL_MAXDECL], puts[APTA_CXL_MAXDECL], inputs[APTA_CXL_MAXDECL];
  int ngets, nputs, ninputs;
  uint64_t input_bytes;    /* of the inputs area used by the job (input_bytes field) */
  long pause_ms;           /* JOBS.md pause: sleep after the first get returns (a test's kill point) */
  /* results */
  unsigned gk, pk;         /* history ids handed out */
  unsigned hits, misses, puts_done, retries;
  /* the log writer: appends one JSON line (no newline in `line`); 0 ok, -1 the log is full */
  int (*log)(struct apta_cxl_job *j, const char *line);
} apta_cxl_job;

/* Make j the store's backend for the next apta_core_run (calls apta_core_begin). */
void apta_cxl_begin(apta_cxl_job *j, const char *function);
/* Free what the job's gets and inputs allocated. */
void apta_cxl_end(apta_cxl_job *j);

/* FNV-1a 64 (the object format's digest). */
uint64_t apta_cxl_fnv(const void *p, size_t n);

/* Copies between process memory and the region in 8-byte accesses where aligned (the guest's
 * region mapping is uncached MMIO: one exit per access). */
void apta_cxl_to_region(volatile uint8_t *dst, const void *src, size_t n);
void apta_cxl_from_region(void *dst, const volatile uint8_t *src, size_t n);

/* Append `s` to buf as a JSON string body (no quotes), escaping as JSON requires. */
void apta_cxl_json_str(char *buf, size_t cap, const char *s);

#endif
