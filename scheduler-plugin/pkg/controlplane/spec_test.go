package controlplane

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/apta/scheduler-plugin/pkg/schema"
)

// TestSpecMatchesTypes checks that schema/controlplane.yaml and the Go wire types name the same fields.
// specSchema is what the tests read of one schema of schema/controlplane.yaml.
type specSchema struct {
	Properties map[string]any `json:"properties"`
	Required   []string       `json:"required"`
}

// specSchemas reads the components' schemas of schema/controlplane.yaml (the one definition of the API).
func specSchemas(t *testing.T) map[string]specSchema {
	t.Helper()
	b, err := os.ReadFile("../../../schema/controlplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Components struct {
			Schemas map[string]specSchema `json:"schemas"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	return spec.Components.Schemas
}

func TestSpecMatchesTypes(t *testing.T) {
	schemas := specSchemas(t)
	tests := []struct {
		schema string
		typ    any
	}{
		{"ServerState", ServerState{}}, {"SchedulableAnswer", SchedulableAnswer{}}, {"ObjectAnswer", ObjectAnswer{}},
		{"ChangeAnswer", ChangeAnswer{}}, {"ServerRequest", ServerRequest{}}, {"CommitRequest", CommitRequest{}}, {"CacheRequest", CacheRequest{}}, {"CancelRequest", CancelRequest{}},
		{"AckRequest", AckRequest{}}, {"ObjectRequest", ObjectRequest{}}, {"RegisterAnswer", RegisterAnswer{}}, {"InvocationRequest", InvocationRequest{}}, {"LogEntry", LogEntry{}}, {"Error", ErrorAnswer{}},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			s, ok := schemas[tt.schema]
			if !ok {
				t.Fatalf("schema %s missing from the spec", tt.schema)
			}
			var inSpec, inGo []string
			for k := range s.Properties {
				inSpec = append(inSpec, k)
			}
			rt := reflect.TypeOf(tt.typ)
			for i := 0; i < rt.NumField(); i++ {
				inGo = append(inGo, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
			}
			sort.Strings(inSpec)
			sort.Strings(inGo)
			if !reflect.DeepEqual(inSpec, inGo) {
				t.Fatalf("spec %v, Go %v", inSpec, inGo)
			}
		})
	}
}

// TestHoldSlotsAreTheRTLs: the conforming server's hold table is the RTL OSC's (one definition:
// schema/params.json holdSlots).
func TestHoldSlotsAreTheRTLs(t *testing.T) {
	b, err := os.ReadFile("../../../schema/params.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Parameters struct {
			HoldSlots struct {
				Default int `json:"default"`
			} `json:"holdSlots"`
		} `json:"parameters"`
	}
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	want := p.Parameters.HoldSlots.Default
	if want == 0 || want != DefaultHoldSlots {
		t.Fatalf("DefaultHoldSlots %d, schema/params.json holdSlots %v", DefaultHoldSlots, want)
	}
}

// TestRefusalStatusIsTheSpecs: every MapUpdCode but ok (schema/core.json, through the generated
// schema package) has the HTTP status registerObject's description gives it ("409 exists (...)"),
// so a code added to the schema fails here until the server answers it.
func TestRefusalStatusIsTheSpecs(t *testing.T) {
	b, err := os.ReadFile("../../../schema/controlplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]struct {
			Description string `json:"description"`
		} `json:"paths"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	inSpec := map[string]int{}
	for _, m := range regexp.MustCompile(`\b([45]\d\d) (\w+) \(`).FindAllStringSubmatch(spec.Paths["/v1/objects"]["post"].Description, -1) {
		inSpec[m[2]], _ = strconv.Atoi(m[1])
	}
	for c := schema.MapUpdCodeOk + 1; c < schema.MapUpdCodeCount; c++ {
		if got, want := refusalStatus[c], inSpec[c.String()]; want == 0 || got != want {
			t.Errorf("MapUpdCode %s: the server answers %d, the spec %d", c, got, want)
		}
	}
	if len(refusalStatus) != len(inSpec) {
		t.Errorf("the server answers %d refusals, the spec names %d: %v", len(refusalStatus), len(inSpec), inSpec)
	}
}

// TestDefaultArenaIsMsemus: the default arena starts where the RTL's msemu allocator does
// (build/rtl/msemu/params.json allocBase, when `make rtl` has run) and holds a largest object.
func TestDefaultArenaIsMsemus(t *testing.T) {
	a := DefaultArena
	if a.LinesPerObject != uint64(schema.Msemu.LinesPerObject) || a.MapEntries != uint64(schema.Msemu.MapEntries) {
		t.Fatalf("DefaultArena %+v, schema.Msemu %+v", a, schema.Msemu)
	}
	if a.Base+a.LinesPerObject*64 > a.End {
		t.Fatalf("DefaultArena [%d, %d) cannot hold an object of %d lines", a.Base, a.End, a.LinesPerObject)
	}
	b, err := os.ReadFile("../../../build/rtl/msemu/params.json")
	if err != nil {
		t.Skipf("no RTL build to compare allocBase with (make rtl): %v", err)
	}
	var built struct {
		AllocBase      uint64 `json:"allocBase"`
		LinesPerObject uint64 `json:"linesPerObject"`
		MapEntries     uint64 `json:"mapEntries"`
	}
	if err := json.Unmarshal(b, &built); err != nil {
		t.Fatal(err)
	}
	if built.AllocBase != a.Base || built.LinesPerObject != a.LinesPerObject || built.MapEntries != a.MapEntries {
		t.Fatalf("DefaultArena %+v, the RTL's msemu %+v", a, built)
	}
}
