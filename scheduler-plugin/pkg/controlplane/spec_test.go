package controlplane

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
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
