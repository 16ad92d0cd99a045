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
 *
 * This file is only the file backend and the command line: the declarations and their checks, the
 * phase marks and the stats line are the backend-neutral core (apta_store_core.c), shared with the
 * CXL backend of the guest runner (qemu-cxl/guest/apta_store_cxl.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apta_store_core.h"
#include "apta_util.h"

static struct {
  const char *store, *ext_in, *ext_out;
} H;

/* read_file and write_file are the host store's I/O: bracketed by apta_io so that a tracer leaves
 * them out (apta_store.h). */
static apta_bytes read_file(const char *dir, const char *name, const char *what) {
  apta_io(1);
  const char *fn = apta_core_function();
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) apta_die("%s: %s %s: %s (%s)", fn, what, name, strerror(errno), path);
  if (fseek(f, 0, SEEK_END)) apta_die("%s: cannot seek %s", fn, path);
  long len = ftell(f);
  rewind(f);
  size_t cap = ((size_t)len + 64) & ~(size_t)63;
  uint8_t *data = aligned_alloc(64, cap);
  if (!data) apta_die("%s: out of memory reading %s", fn, name);
  memset(data + len, 0, cap - (size_t)len);
  if (len && fread(data, 1, (size_t)len, f) != (size_t)len) apta_die("%s: short read of %s", fn, path);
  fclose(f);
  apta_bytes b = {data, (size_t)len};
  apta_io(0);
  return b;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
  apta_io(1);
  const char *fn = apta_core_function();
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) apta_die("%s: cannot write %s: %s", fn, tmp, strerror(errno));
  if (len && fwrite(data, 1, len, f) != len) apta_die("%s: short write to %s", fn, tmp);
  if (fclose(f)) apta_die("%s: cannot close %s", fn, tmp);
  if (rename(tmp, path)) apta_die("%s: cannot rename %s: %s", fn, tmp, strerror(errno));
  apta_io(0);
}

static apta_bytes file_get(const char *name) { return read_file(H.store, name, "get"); }
static void file_put(const char *name, const void *data, size_t len) { write_file(H.store, name, data, len); }
static apta_bytes file_input(const char *name) { return read_file(H.ext_in, name, "external input"); }
static void file_emit(const char *name, const void *data, size_t len) { write_file(H.ext_out, name, data, len); }

static const apta_backend FILE_BACKEND = {file_get, file_put, file_input, file_emit};

int main(int argc, char **argv) {
  apta_core_begin(&FILE_BACKEND, argv[0]);
  int instance = 0, instances = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) apta_die("%s: option %s needs a value", argv[0], a);
    const char *v = argv[++i];
    if (!strcmp(a, "--function")) apta_core_set_function(v);
    else if (!strcmp(a, "--store")) H.store = v;
    else if (!strcmp(a, "--ext-in")) H.ext_in = v;
    else if (!strcmp(a, "--ext-out")) H.ext_out = v;
    else if (!strcmp(a, "--instance")) instance = atoi(v);
    else if (!strcmp(a, "--instances")) instances = atoi(v);
    else if (!strcmp(a, "--get")) apta_core_declare(APTA_DECL_GET, v, a);
    else if (!strcmp(a, "--put")) apta_core_declare(APTA_DECL_PUT, v, a);
    else if (!strcmp(a, "--input")) apta_core_declare(APTA_DECL_INPUT, v, a);
    else if (!strcmp(a, "--emit")) apta_core_declare(APTA_DECL_EMIT, v, a);
    else if (!strcmp(a, "--param")) {
      char *eq = strchr(v, '=');
      if (!eq) apta_die("%s: bad --param %s", argv[0], v);
      *eq = 0;
      apta_core_param(v, eq + 1);
    } else apta_die("%s: unknown option %s", argv[0], a);
  }
  if (!H.store || !H.ext_in || !H.ext_out) apta_die("%s: --store, --ext-in and --ext-out are required", argv[0]);
  apta_core_instance(instance, instances);

  char stats[1024];
  apta_core_run(apta_function, stats, sizeof stats);
  printf("%s\n", stats);
  return 0;
}
