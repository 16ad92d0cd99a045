/* PHI input generator: `records` = N synthetic clinical records (about 500 bytes each). */
#include <stdio.h>

#include "apta_util.h"

static const char *const FIRST_F[] = {"Maria", "Linda", "Aisha", "Mei", "Olga", "Priya", "Grace", "Fatima", "Elena", "Hannah", "Yuki", "Sofia"};
static const char *const FIRST_M[] = {"James", "Ahmed", "Carlos", "Wei", "Ivan", "Rahul", "Daniel", "Kwame", "Lucas", "Tomas", "Kenji", "Omar"};
static const char *const LAST[] = {"Gonzalez", "Okafor", "Nakamura", "Petrov", "Sharma", "Whitfield", "Lindqvist", "Haddad", "Moreau", "Kowalski", "Brennan", "Castillo", "Abernathy", "Delacroix", "Fitzgerald", "Yamamoto"};
static const char *const DOCS[] = {"Chen", "Adeyemi", "Rossi", "Novak", "Iyer", "Schmidt"};
static const char *const STREETS[] = {"Oak Street", "Maple Avenue", "Cedar Road", "Birch Lane", "Elm Drive", "Willow Court"};
static const char *const CITIES[] = {"Springfield", "Riverton", "Lakeside", "Fairview", "Georgetown"};
static const char *const ZIPS[] = {"62704", "62711", "30301", "30318", "73301", "73344", "98101"};
static const char *const REL[] = {"daughter", "son", "wife", "husband", "sister", "brother"};
static const struct { const char *code, *text; } DX[] = {
    {"E11.9", "Type 2 diabetes mellitus"}, {"I10", "Essential hypertension"}, {"J45.909", "Asthma, uncomplicated"},
    {"N18.3", "Chronic kidney disease, stage 3"}, {"I48.91", "Atrial fibrillation"}, {"F32.9", "Major depressive disorder"}};
#define N(a) (sizeof(a) / sizeof((a)[0]))

int gen_main(const apta_gen_args *a) {
  long n = apta_gen_long(a, "records", 40);
  apta_rng r = apta_rng_seed((uint64_t)apta_gen_long(a, "seed", 1));
  apta_buf b = {0};
  for (long i = 0; i < n; i++) {
    int female = (int)apta_rng_below(&r, 2);
    const char *first = female ? FIRST_F[apta_rng_below(&r, N(FIRST_F))] : FIRST_M[apta_rng_below(&r, N(FIRST_M))];
    const char *last = LAST[apta_rng_below(&r, N(LAST))];
    const char *rel = REL[apta_rng_below(&r, N(REL))];
    const char *relname = apta_rng_below(&r, 2) ? FIRST_F[apta_rng_below(&r, N(FIRST_F))] : FIRST_M[apta_rng_below(&r, N(FIRST_M))];
    const char *doc = DOCS[apta_rng_below(&r, N(DOCS))];
    int by = 1930 + (int)apta_rng_below(&r, 75), bm = 1 + (int)apta_rng_below(&r, 12), bd = 1 + (int)apta_rng_below(&r, 28);
    int ay = 2021 + (int)apta_rng_below(&r, 4), am = 1 + (int)apta_rng_below(&r, 12), ad = 1 + (int)apta_rng_below(&r, 28);
    int dx = (int)apta_rng_below(&r, N(DX));
    int sys = 105 + (int)apta_rng_below(&r, 60) + (dx == 1 ? 20 : 0), dia = 65 + (int)apta_rng_below(&r, 30);
    int hr = 55 + (int)apta_rng_below(&r, 50), glu = 80 + (int)apta_rng_below(&r, 60) + (dx == 0 ? 70 : 0);
    int age = ay - by - ((am < bm || (am == bm && ad < bd)) ? 1 : 0);
    apta_buf_printf(&b, "RECORD %04ld\nPatient: %s %s\nDOB: %04d-%02d-%02d\nMRN: %07u\nSSN: %03u-%02u-%04u\n", i + 1, first, last,
                    by, bm, bd, 1000000 + apta_rng_below(&r, 9000000), 100 + apta_rng_below(&r, 800), 10 + apta_rng_below(&r, 89),
                    1000 + apta_rng_below(&r, 9000));
    apta_buf_printf(&b, "Phone: (%03u) %03u-%04u\nEmail: %c%s.%u@example.org\n", 200 + apta_rng_below(&r, 700), 200 + apta_rng_below(&r, 700),
                    apta_rng_below(&r, 10000), first[0] | 0x20, last, apta_rng_below(&r, 100));
    apta_buf_printf(&b, "Address: %u %s, %s, %s\nAdmitted: %04d-%02d-%02d\nDiagnosis: %s %s\nVitals: BP %d/%d HR %d Glucose %d\n",
                    1 + apta_rng_below(&r, 999), STREETS[apta_rng_below(&r, N(STREETS))], CITIES[apta_rng_below(&r, N(CITIES))],
                    ZIPS[apta_rng_below(&r, N(ZIPS))], ay, am, ad, DX[dx].code, DX[dx].text, sys, dia, hr, glu);
    apta_buf_printf(&b, "Note: %s %s is a %d year old %s seen on %04d-%02d-%02d for %s. %s %s reports %s. "
                        "Follow-up with Dr. %s on %04d-%02d-%02d. Contact %s %s at (%03u) %03u-%04u.\n\n",
                    first, last, age, female ? "female" : "male", ay, am, ad, DX[dx].text, female ? "Ms." : "Mr.", last,
                    apta_rng_below(&r, 2) ? "improved symptoms since the last visit" : "persistent fatigue and poor sleep", doc,
                    ay + (am == 12), am % 12 + 1, ad, rel, relname, 200 + apta_rng_below(&r, 700), 200 + apta_rng_below(&r, 700),
                    apta_rng_below(&r, 10000));
  }
  apta_gen_write(a, 0, "records", b.data, b.len);
  return 0;
}
