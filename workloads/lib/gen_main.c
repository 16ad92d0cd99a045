/* gen_main.c: main() of every input generator: `gen <store-dir> <external-dir> key=value...`. */
#include <stdio.h>
#include <string.h>

#include "apta_util.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <store-dir> <external-dir> [key=value...]\n", argv[0]);
    return 2;
  }
  apta_gen_args a = {0};
  a.store_dir = argv[1];
  a.ext_dir = argv[2];
  a.k = apta_xmalloc(sizeof(char *) * (size_t)argc);
  a.v = apta_xmalloc(sizeof(char *) * (size_t)argc);
  for (int i = 3; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) apta_die("generator argument %s is not key=value", argv[i]);
    *eq = 0;
    a.k[a.n] = argv[i];
    a.v[a.n++] = eq + 1;
  }
  return gen_main(&a);
}
