/* apta_store_host.c: the host implementation of apta_store.h, and main() of every function.
 *
 * The store is a directory with one file per object; a put writes a temporary file and renames it
 * over the old one (atomic replacement). External inputs and outputs are two more directories.
 * workloads/run.py invokes a function binary as
 *
 *   <fn> --function NAME --store DIR --ext-in DIR --ext-out DIR --instance I --instances N
 *        [--get OBJ]... [--put OBJ]... [--input NAME]... [--emit NAME]... [--param K=V]...
 *
 * with the reads and writes the workflow file declares for this instance, runs apta_function()
 * between the phase markers (apta_store.h), and prints one JSON line with the phase times and
 * object bytes on stdout. Errors exit with status 3 and a message naming the function and object.
 */
#define _POSIX_C_SOURCE 200809L
#include "apta_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
  const char *function, *store, *ext_in, *ext_out;
  int instance, instances;
  name_set gets, puts, inputs, emits;
  const char *pk[MAXN], *pv[MAXN];
  int np;
  int phase; /* 0 = before GET */
  double t_start, t_phase[5];
  uint64_t get_bytes, put_bytes, input_bytes, emit_bytes;
} S;

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

static void add(name_set *s, const char *name, const char *flag) {
  if (s->n == MAXN) apta_die("too many %s arguments", flag);
  s->names[s->n++] = name;
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

/* read_file and write_file are the host store's I/O: bracketed by apta_io so that a tracer leaves
 * them out (apta_store.h). */
static apta_bytes read_file(const char *dir, const char *name, const char *what) {
  apta_io(1);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) apta_die("%s: %s %s: %s (%s)", S.function, what, name, strerror(errno), path);
  if (fseek(f, 0, SEEK_END)) apta_die("%s: cannot seek %s", S.function, path);
  long len = ftell(f);
  rewind(f);
  size_t cap = ((size_t)len + 64) & ~(size_t)63;
  uint8_t *data = aligned_alloc(64, cap);
  if (!data) apta_die("%s: out of memory reading %s", S.function, name);
  memset(data + len, 0, cap - (size_t)len);
  if (len && fread(data, 1, (size_t)len, f) != (size_t)len) apta_die("%s: short read of %s", S.function, path);
  fclose(f);
  apta_bytes b = {data, (size_t)len};
  apta_io(0);
  return b;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
  apta_io(1);
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) apta_die("%s: cannot write %s: %s", S.function, tmp, strerror(errno));
  if (len && fwrite(data, 1, len, f) != len) apta_die("%s: short write to %s", S.function, tmp);
  if (fclose(f)) apta_die("%s: cannot close %s", S.function, tmp);
  if (rename(tmp, path)) apta_die("%s: cannot rename %s: %s", S.function, tmp, strerror(errno));
  apta_io(0);
}

apta_bytes apta_get(const char *name) {
  int i = find(&S.gets, name);
  if (i < 0) apta_die("%s: get(%s): not a declared input (declared: %s)", S.function, name, list(&S.gets));
  if (S.phase > APTA_PHASE_GET)
    apta_die("%s: get(%s) after the GET phase ended: read every input before computing", S.function, name);
  if (S.phase == 0) enter(APTA_PHASE_GET);
  apta_bytes b = read_file(S.store, name, "get");
  apta_object_mark(APTA_OBJ_GET, name, b.data, b.len);
  S.get_bytes += b.len;
  if (!S.gets.done[i]) {
    S.gets.done[i] = 1;
    if (++S.gets.ndone == S.gets.n) enter(APTA_PHASE_COMPUTE);
  }
  return b;
}

void apta_put(const char *name, const void *data, size_t len) {
  int i = find(&S.puts, name);
  if (i < 0) apta_die("%s: put(%s): not a declared output (declared: %s)", S.function, name, list(&S.puts));
  if (S.phase < APTA_PHASE_COMPUTE)
    apta_die("%s: put(%s) before every declared input was read (%s)", S.function, name, list(&S.gets));
  if (S.phase == APTA_PHASE_END || S.puts.done[i])
    apta_die("%s: put(%s) twice: a function writes each object once", S.function, name);
  if (S.phase == APTA_PHASE_COMPUTE) enter(APTA_PHASE_PUT);
  apta_object_mark(APTA_OBJ_PUT, name, data, len);
  write_file(S.store, name, data, len);
  S.put_bytes += len;
  S.puts.done[i] = 1;
  if (++S.puts.ndone == S.puts.n) enter(APTA_PHASE_END);
}

apta_bytes apta_input(const char *name) {
  int i = find(&S.inputs, name);
  if (i < 0) apta_die("%s: input(%s): not a declared external input (declared: %s)", S.function, name, list(&S.inputs));
  apta_bytes b = read_file(S.ext_in, name, "external input");
  S.input_bytes += b.len;
  return b;
}

void apta_emit(const char *name, const void *data, size_t len) {
  int i = find(&S.emits, name);
  if (i < 0) apta_die("%s: emit(%s): not a declared external output (declared: %s)", S.function, name, list(&S.emits));
  if (S.emits.done[i]) apta_die("%s: emit(%s) twice", S.function, name);
  S.emits.done[i] = 1;
  write_file(S.ext_out, name, data, len);
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

int main(int argc, char **argv) {
  S.function = argv[0];
  S.instances = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) apta_die("%s: option %s needs a value", argv[0], a);
    const char *v = argv[++i];
    if (!strcmp(a, "--function")) S.function = v;
    else if (!strcmp(a, "--store")) S.store = v;
    else if (!strcmp(a, "--ext-in")) S.ext_in = v;
    else if (!strcmp(a, "--ext-out")) S.ext_out = v;
    else if (!strcmp(a, "--instance")) S.instance = atoi(v);
    else if (!strcmp(a, "--instances")) S.instances = atoi(v);
    else if (!strcmp(a, "--get")) add(&S.gets, v, a);
    else if (!strcmp(a, "--put")) add(&S.puts, v, a);
    else if (!strcmp(a, "--input")) add(&S.inputs, v, a);
    else if (!strcmp(a, "--emit")) add(&S.emits, v, a);
    else if (!strcmp(a, "--param")) {
      char *eq = strchr(v, '=');
      if (!eq || S.np == MAXN) apta_die("%s: bad --param %s", argv[0], v);
      *eq = 0;
      S.pk[S.np] = v;
      S.pv[S.np++] = eq + 1;
    } else apta_die("%s: unknown option %s", argv[0], a);
  }
  if (!S.store || !S.ext_in || !S.ext_out) apta_die("%s: --store, --ext-in and --ext-out are required", argv[0]);

  S.t_start = now();
  if (S.gets.n == 0) { S.t_phase[APTA_PHASE_GET] = S.t_start; enter(APTA_PHASE_COMPUTE); }
  int rc = apta_function();
  if (rc) apta_die("%s: function returned %d", S.function, rc);
  if (S.gets.ndone < S.gets.n) apta_die("%s: declared inputs never read: %s", S.function, list(&S.gets));
  if (S.puts.ndone < S.puts.n) apta_die("%s: declared outputs never written: %s", S.function, list(&S.puts));
  for (int i = 0; i < S.emits.n; i++)
    if (!S.emits.done[i]) apta_die("%s: declared external output %s never emitted", S.function, S.emits.names[i]);
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
  printf("{\"function\": \"%s\", \"instance\": %d, \"get_s\": %.9f, \"compute_s\": %.9f, \"put_s\": %.9f, "
         "\"get_bytes\": %llu, \"put_bytes\": %llu, \"input_bytes\": %llu, \"emit_bytes\": %llu, \"maxrss_kb\": %ld}\n",
         S.function, S.instance, S.gets.n ? S.t_phase[APTA_PHASE_COMPUTE] - S.t_phase[APTA_PHASE_GET] : 0.0,
         S.t_phase[APTA_PHASE_PUT] - S.t_phase[APTA_PHASE_COMPUTE], S.t_phase[APTA_PHASE_END] - S.t_phase[APTA_PHASE_PUT],
         (unsigned long long)S.get_bytes, (unsigned long long)S.put_bytes, (unsigned long long)S.input_bytes,
         (unsigned long long)S.emit_bytes, hwm_kb);
  return 0;
}
