/* deIdentify: replace every PHI span of `tagged` with its type in brackets ("[NAME]"), the
 * Safe Harbor de-identified text. get tagged -> put deidentified. */
#include "apta_store.h"
#include "phi.h"

int apta_function(void) {
  apta_bytes in = apta_get("tagged");
  phi_tagged t = phi_tagged_read(in.data, in.len);
  apta_buf out = {0};
  uint32_t at = 0;
  for (uint32_t i = 0; i < t.nspans; i++) {
    apta_buf_put(&out, t.text + at, t.spans[i].start - at);
    apta_buf_printf(&out, "[%s]", phi_type_name[t.spans[i].type]);
    at = t.spans[i].start + t.spans[i].len;
  }
  apta_buf_put(&out, t.text + at, t.text_len - at);
  apta_put("deidentified", out.data, out.len);
  return 0;
}
