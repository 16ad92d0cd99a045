package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// patterns is where every layer's instance of a workflow pattern is defined.
const patterns = "../../../workloads/patterns"

// TestPatterns loads the scheduler instance of every pattern that has one: each DAG is listed in
// topological order and every input is produced by a function before it (LoadPattern validates).
func TestPatterns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(patterns, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pattern files in %s (%v)", patterns, err)
	}
	loaded := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"scheduler"`) {
			continue
		}
		w, err := LoadPattern(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".json"); w.Name != want {
			t.Errorf("%s: workflow named %q, want %q", f, w.Name, want)
		}
		loaded++
	}
	// the e2e's random-workflows scenario runs these four
	for _, n := range []string{"pipeline", "broadcast", "scatter-gather", "map-reduce"} {
		if _, err := LoadPattern(filepath.Join(patterns, n+".json")); err != nil {
			t.Errorf("%v", err)
		}
	}
	if loaded < 4 {
		t.Errorf("only %d patterns with a scheduler instance", loaded)
	}
}

// TestPatternErrors: a bad scheduler instance is rejected naming the file and the function.
func TestPatternErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"name": "p", "scheduler": {"functions": [{"name": "a", "after": [], "reads": ["x"], "writes": ["y"]}]}}`, "a: input x not produced"},
		{`{"name": "p", "scheduler": {"functions": [{"name": "a", "after": ["b"], "reads": [], "writes": ["y"]}, {"name": "b", "after": [], "reads": [], "writes": []}]}}`, "a: predecessor b not listed before it"},
		{`{"name": "p", "scheduler": {"functions": [{"name": "a", "after": [], "reads": [], "writes": []}, {"name": "a", "after": [], "reads": [], "writes": []}]}}`, "function a listed twice"},
		{`{"name": "p", "model": {}}`, `pattern "p" has no scheduler instance`},
	} {
		f := filepath.Join(t.TempDir(), "p.json")
		if err := os.WriteFile(f, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPattern(f)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: got %v, want an error naming the file and %q", c.doc, err, c.want)
		}
	}
}
