package workflow

import "testing"

// TestShapes checks each DAG is listed in topological order and every input is produced by a
// predecessor (so the runner never asks for an object nobody committed).
func TestShapes(t *testing.T) {
	for _, w := range []Workflow{Pipeline(4), Broadcast(3), ScatterGather(3), MapReduce(2, 3)} {
		t.Run(w.Name, func(t *testing.T) {
			seen := map[string]Function{}
			for _, f := range w.Funcs {
				produced := map[string]bool{}
				for _, p := range f.Preds {
					pf, ok := seen[p]
					if !ok {
						t.Fatalf("%s: predecessor %s not listed before it", f.Name, p)
					}
					for _, o := range pf.Outputs {
						produced[o] = true
					}
				}
				for _, in := range f.Inputs {
					if !produced[in] {
						t.Fatalf("%s: input %s not produced by a predecessor", f.Name, in)
					}
				}
				seen[f.Name] = f
			}
		})
	}
}
