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
func TestSpecMatchesTypes(t *testing.T) {
	b, err := os.ReadFile("../../../schema/controlplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		schema string
		typ    any
	}{
		{"ServerState", ServerState{}}, {"SchedulableAnswer", SchedulableAnswer{}}, {"ObjectAnswer", ObjectAnswer{}},
		{"ChangeAnswer", ChangeAnswer{}}, {"ServerRequest", ServerRequest{}}, {"CommitRequest", CommitRequest{}},
		{"AckRequest", AckRequest{}}, {"ObjectRequest", ObjectRequest{}}, {"InvocationRequest", InvocationRequest{}}, {"LogEntry", LogEntry{}}, {"Error", ErrorAnswer{}},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			s, ok := spec.Components.Schemas[tt.schema]
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
