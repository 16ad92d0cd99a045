package agent

import (
	"reflect"
	"testing"

	"github.com/apta/scheduler-plugin/pkg/apta"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

func TestDesired(t *testing.T) {
	tests := []struct {
		name string
		in   *controlplane.ServerState
		want map[string]string
	}{
		{"unknown server", nil, map[string]string{apta.AnnotationNodeSchedulable: "false", apta.AnnotationNodeFenced: "false", apta.AnnotationNodePending: "0", apta.AnnotationNodePendingObject: "", apta.AnnotationNodeEpoch: "0"}},
		{"clear", &controlplane.ServerState{Name: "s1", Live: true, Epoch: 1, Schedulable: true},
			map[string]string{apta.AnnotationNodeSchedulable: "true", apta.AnnotationNodeFenced: "false", apta.AnnotationNodePending: "0", apta.AnnotationNodePendingObject: "", apta.AnnotationNodeEpoch: "1"}},
		{"pending", &controlplane.ServerState{Name: "s1", Live: true, Epoch: 2, Pending: 3, PendingObjects: []string{"x", "y"}},
			map[string]string{apta.AnnotationNodeSchedulable: "false", apta.AnnotationNodeFenced: "false", apta.AnnotationNodePending: "3", apta.AnnotationNodePendingObject: "x,y", apta.AnnotationNodeEpoch: "2"}},
		{"too many pending objects", &controlplane.ServerState{Name: "s1", Live: true, Epoch: 1, Pending: 100, PendingObjects: []string{"a"}, PendingObjectsTruncated: true},
			map[string]string{apta.AnnotationNodeSchedulable: "false", apta.AnnotationNodeFenced: "false", apta.AnnotationNodePending: "100", apta.AnnotationNodePendingObject: "*", apta.AnnotationNodeEpoch: "1"}},
		{"fenced", &controlplane.ServerState{Name: "s1", Live: true, Fenced: true, Epoch: 1},
			map[string]string{apta.AnnotationNodeSchedulable: "false", apta.AnnotationNodeFenced: "true", apta.AnnotationNodePending: "0", apta.AnnotationNodePendingObject: "", apta.AnnotationNodeEpoch: "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Desired(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
