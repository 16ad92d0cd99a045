/* apta_store_core.c: the backend-neutral store (apta_store_core.h): declarations and their checks,
 * phase marks, parameters, the stats line. One definition for the host store and the CXL runner. */
#define _POSIX_C_SOURCE 200809L
#include "apta_store_core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apta_util.h"

void __attribute__((noinline, weak)) apta_phase_hook(int phase, const char *function) {
  __asm__ volatile("" ::"r"(phase), "r"(function) : "memory");
}
void __attribute__((noinline, weak)) apta_object_hook(int kind, const char *name, const void *addr, size_t len) {
  __asm__ volatile("" ::"r"(kind), "r"(name), "r"(addr), "r"(len) : "memory");
}
void __attribute__((noinline, weak)) apta_io_hook(int on) { __asm__ volatile("" ::"r"(on) : "memory"); }

#define MAXN 64
typedef struct {
  const char *names[MAXN];
  int done[MAXN];
  int n, ndone;
} name_set;

static struct {
  const apta_backend *be;
  const char *function;
  int instance, instances;
  name_set decl[APTA_DECL_KINDS];
  const char *pk[MAXN], *pv[MAXN];
  int np;
  int phase; /* 0 = before GET */
  double t_start, t_phase[5];
  unsigned long long get_bytes, put_bytes, input_bytes, emit_bytes;
} S;

#define GETS (S.decl[APTA_DECL_GET])
#define PUTS (S.decl[APTA_DECL_PUT])
#define INPUTS (S.decl[APTA_DECL_INPUT])
#define EMITS (S.decl[APTA_DECL_EMIT])

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void enter(int phase) {
  S.phase = phase;
  S.t_phase[phase] = now();
  apta_phase(phase, S.function);
}

static int find(name_set *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->names[i], name) == 0) return i;
  return -1;
}

static const char *list(const name_set *s) {
  static char buf[2048];
  buf[0] = 0;
  for (int i = 0; i < s->n; i++) {
    if (i) strncat(buf, ", ", sizeof buf - strlen(buf) - 1);
    strncat(buf, s->names[i], sizeof buf - strlen(buf) - 1);
  }
  return s->n ? buf : "(none)";
}

void apta_core_begin(const apta_backend *be, const char *function) {
  memset(&S, 0, sizeof S);
  S.be = be;
  S.function = function;
  S.instances = 1;
}
void apta_core_set_function(const char *function) { S.function = function; }
const char *apta_core_function(void) { return S.function; }

void apta_core_declare(int kind, const char *name, const char *flag) {
  name_set *s = &S.decl[kind];
  if (s->n == MAXN) apta_die("too many %s arguments", flag);
  s->names[s->n++] = name;
}

void apta_core_param(const char *key, const char *value) {
  if (S.np == MAXN) apta_die("%s: too many parameters (%s)", S.function, key);
  S.pk[S.np] = key;
  S.pv[S.np++] = value;
}

void apta_core_instance(int instance, int instances) {
  S.instance = instance;
  S.instances = instances;
}

apta_bytes apta_get(const char *name) {
  int i = find(&GETS, name);
  if (i < 0) apta_die("%s: get(%s): not a declared input (declared: %s)", S.function, name, list(&GETS));
  if (S.phase > APTA_PHASE_GET)
    apta_die("%s: get(%s) after the GET phase ended: read every input before computing", S.function, name);
  if (S.phase == 0) enter(APTA_PHASE_GET);
  apta_bytes b = S.be->get(name);
  apta_object_mark(APTA_OBJ_GET, name, b.data, b.len);
  S.get_bytes += b.len;
  if (!GETS.done[i]) {
    GETS.done[i] = 1;
    if (++GETS.ndone == GETS.n) enter(APTA_PHASE_COMPUTE);
  }
  return b;
}

void apta_put(const char *name, const void *data, size_t len) {
  int i = find(&PUTS, name);
  if (i < 0) apta_die("%s: put(%s): not a declared output (declared: %s)", S.function, name, list(&PUTS));
  if (S.phase < APTA_PHASE_COMPUTE)
    apta_die("%s: put(%s) before every declared input was read (%s)", S.function, name, list(&GETS));
  if (S.phase == APTA_PHASE_END || PUTS.done[i])
    apta_die("%s: put(%s) twice: a function writes each object once", S.function, name);
  if (S.phase == APTA_PHASE_COMPUTE) enter(APTA_PHASE_PUT);
  apta_object_mark(APTA_OBJ_PUT, name, data, len);
  S.be->put(name, data, len);
  S.put_bytes += len;
  PUTS.done[i] = 1;
  if (++PUTS.ndone == PUTS.n) enter(APTA_PHASE_END);
}

apta_bytes apta_input(const char *name) {
  int i = find(&INPUTS, name);
  if (i < 0) apta_die("%s: input(%s): not a declared external input (declared: %s)", S.function, name, list(&INPUTS));
  apta_bytes b = S.be->input(name);
  S.input_bytes += b.len;
  return b;
}

void apta_emit(const char *name, const void *data, size_t len) {
  int i = find(&EMITS, name);
  if (i < 0) apta_die("%s: emit(%s): not a declared external output (declared: %s)", S.function, name, list(&EMITS));
  if (EMITS.done[i]) apta_die("%s: emit(%s) twice", S.function, name);
  EMITS.done[i] = 1;
  S.be->emit(name, data, len);
  S.emit_bytes += len;
}

int apta_instance(void) { return S.instance; }
int apta_instances(void) { return S.instances; }

static const char *param(const char *key) {
  for (int i = S.np - 1; i >= 0; i--)
    if (strcmp(S.pk[i], key) == 0) return S.pv[i];
  return NULL;
}
long apta_param_long(const char *key, long def) {
  const char *v = param(key);
  if (!v) return def;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end) apta_die("%s: parameter %s=%s is not an integer", S.function, key, v);
  return x;
}
double apta_param_double(const char *key, double def) {
  const char *v = param(key);
  if (!v) return def;
  char *end;
  double x = strtod(v, &end);
  if (*end) apta_die("%s: parameter %s=%s is not a number", S.function, key, v);
  return x;
}

void apta_core_run(int (*fn)(void), char *out, size_t cap) {
  S.t_start = now();
  if (GETS.n == 0) { S.t_phase[APTA_PHASE_GET] = S.t_start; enter(APTA_PHASE_COMPUTE); }
  int rc = fn();
  if (rc) apta_die("%s: function returned %d", S.function, rc);
  if (GETS.ndone < GETS.n) apta_die("%s: declared inputs never read: %s", S.function, list(&GETS));
  if (PUTS.ndone < PUTS.n) apta_die("%s: declared outputs never written: %s", S.function, list(&PUTS));
  for (int i = 0; i < EMITS.n; i++)
    if (!EMITS.done[i]) apta_die("%s: declared external output %s never emitted", S.function, EMITS.names[i]);
  double t_end = now();
  if (S.phase == APTA_PHASE_COMPUTE) { S.t_phase[APTA_PHASE_PUT] = t_end; enter(APTA_PHASE_END); }
  S.t_phase[APTA_PHASE_END] = t_end;

  /* peak resident set of this program: VmHWM (ru_maxrss would include the parent's memory before exec) */
  long hwm_kb = -1;
  FILE *st = fopen("/proc/self/status", "r");
  if (st) {
    char line[256];
    while (fgets(line, sizeof line, st))
      if (sscanf(line, "VmHWM: %ld kB", &hwm_kb) == 1) break;
    fclose(st);
  }
  snprintf(out, cap,
           "{\"function\": \"%s\", \"instance\": %d, \"get_s\": %.9f, \"compute_s\": %.9f, \"put_s\": %.9f, "
           "\"get_bytes\": %llu, \"put_bytes\": %llu, \"input_bytes\": %llu, \"emit_bytes\": %llu, \"maxrss_kb\": %ld}",
           S.function, S.instance, GETS.n ? S.t_phase[APTA_PHASE_COMPUTE] - S.t_phase[APTA_PHASE_GET] : 0.0,
           S.t_phase[APTA_PHASE_PUT] - S.t_phase[APTA_PHASE_COMPUTE], S.t_phase[APTA_PHASE_END] - S.t_phase[APTA_PHASE_PUT],
           S.get_bytes, S.put_bytes, S.input_bytes, S.emit_bytes, hwm_kb);
}
