package schema

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The generated file against the files it is generated from, read here without Python: `go test`
// fails while schema_generated.go is stale (`python -m apta.schema docs` rewrites it; the Python
// drift test, tests/test_schema.py, compares it byte for byte).

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile("../../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestEnumsAreTheSchemas(t *testing.T) {
	var core struct {
		Enums map[string]struct {
			Values [][]string `json:"values"`
		} `json:"enums"`
	}
	readJSON(t, "schema/core.json", &core)
	want := map[string][]string{}
	for name, e := range core.Enums {
		for _, v := range e.Values {
			want[name] = append(want[name], v[0])
		}
	}
	if !reflect.DeepEqual(enumNames, want) {
		t.Fatalf("schema_generated.go is stale: enums %v, schema/core.json %v", enumNames, want)
	}
	// the typed constants name the same values
	if MapUpdCodeCount != len(want["MapUpdCode"]) || DirStateCount != len(want["DirState"]) {
		t.Errorf("counts %d, %d: schema/core.json %d, %d", MapUpdCodeCount, DirStateCount, len(want["MapUpdCode"]), len(want["DirState"]))
	}
	for i, n := range want["MapUpdCode"] {
		if got := MapUpdCode(i).String(); got != n {
			t.Errorf("MapUpdCode(%d) = %q, schema/core.json %q", i, got, n)
		}
	}
	if got := MapUpdCode(MapUpdCodeCount).String(); !strings.HasPrefix(got, "MapUpdCode(") {
		t.Errorf("a value past the enum is named %q", got)
	}
}

// TestParamsAreTheSchemas: Defaults is schema/params.json with schema/messages.json's parameters,
// Msemu those with rtl/variants.json's overrides (as Elaborate resolves them).
func TestParamsAreTheSchemas(t *testing.T) {
	type entry struct {
		Default int `json:"default"`
	}
	var msgs, params struct {
		Parameters map[string]entry `json:"parameters"`
	}
	readJSON(t, "schema/messages.json", &msgs)
	readJSON(t, "schema/params.json", &params)
	defaults := map[string]int{}
	for _, src := range []map[string]entry{msgs.Parameters, params.Parameters} {
		for k, e := range src {
			defaults[k] = e.Default
		}
	}
	var variants struct {
		Variants []struct {
			Name   string         `json:"name"`
			Params map[string]any `json:"params"`
		} `json:"variants"`
	}
	readJSON(t, "rtl/variants.json", &variants)
	msemu := map[string]int{}
	for k, v := range defaults {
		msemu[k] = v
	}
	found := false
	for _, v := range variants.Variants {
		if v.Name != "msemu" {
			continue
		}
		found = true
		for k, val := range v.Params {
			if n, ok := val.(float64); ok {
				msemu[k] = int(n)
			}
		}
	}
	if !found {
		t.Fatal("rtl/variants.json has no variant msemu")
	}
	for name, c := range map[string]struct {
		got  Params
		want map[string]int
	}{"Defaults": {Defaults, defaults}, "Msemu": {Msemu, msemu}} {
		got := map[string]int{}
		rv := reflect.ValueOf(c.got)
		for i := 0; i < rv.NumField(); i++ {
			f := rv.Type().Field(i).Name
			got[strings.ToLower(f[:1])+f[1:]] = int(rv.Field(i).Int())
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("schema_generated.go is stale: %s %v, the schema %v", name, got, c.want)
		}
	}
}
