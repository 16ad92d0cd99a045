package apta

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
)

func mirrored(name, server string, ann map[string]string) *v1.Node {
	n := node(name, server)
	n.Annotations = ann
	return n
}

func TestQueueingHint(t *testing.T) {
	pending := map[string]string{AnnotationNodeSchedulable: "false", AnnotationNodeFenced: "false", AnnotationNodePending: "1", AnnotationNodePendingObject: "x"}
	clear := map[string]string{AnnotationNodeSchedulable: "true", AnnotationNodeFenced: "false", AnnotationNodePending: "0", AnnotationNodePendingObject: ""}
	fenced := map[string]string{AnnotationNodeSchedulable: "false", AnnotationNodeFenced: "true", AnnotationNodePending: "0", AnnotationNodePendingObject: ""}
	pendingY := map[string]string{AnnotationNodeSchedulable: "false", AnnotationNodeFenced: "false", AnnotationNodePending: "1", AnnotationNodePendingObject: "y"}
	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new *v1.Node
		want     fwk.QueueingHint
		wantErr  bool
	}{
		{name: "invalidation cleared", pod: aptaPod("f", nil), old: mirrored("n1", "s1", pending), new: mirrored("n1", "s1", clear), want: fwk.Queue},
		{name: "invalidation appeared", pod: aptaPod("f", nil), old: mirrored("n1", "s1", clear), new: mirrored("n1", "s1", pending), want: fwk.QueueSkip},
		{name: "declared x: pending moves from x to y", pod: aptaPod("f", map[string]string{AnnotationInputs: "x"}), old: mirrored("n1", "s1", pending), new: mirrored("n1", "s1", pendingY), want: fwk.Queue},
		{name: "declared x: pending on y only, unrelated change", pod: aptaPod("f", map[string]string{AnnotationInputs: "x"}), old: mirrored("n1", "s1", pendingY), new: mirrored("n1", "s1", pendingY), want: fwk.QueueSkip},
		{name: "undeclared: pending on y stays", pod: aptaPod("f", nil), old: mirrored("n1", "s1", pending), new: mirrored("n1", "s1", pendingY), want: fwk.QueueSkip},
		{name: "rejoined", pod: aptaPod("f", nil), old: mirrored("n1", "s1", fenced), new: mirrored("n1", "s1", clear), want: fwk.Queue},
		{name: "fenced", pod: aptaPod("f", nil), old: mirrored("n1", "s1", clear), new: mirrored("n1", "s1", fenced), want: fwk.QueueSkip},
		{name: "eligible node added", pod: aptaPod("f", nil), new: mirrored("n1", "s1", clear), want: fwk.Queue},
		{name: "unlabelled node added", pod: aptaPod("f", nil), new: mirrored("n1", "", clear), want: fwk.QueueSkip},
		{name: "label added", pod: aptaPod("f", nil), old: mirrored("n1", "", clear), new: mirrored("n1", "s1", clear), want: fwk.Queue},
		{name: "not a node", pod: aptaPod("f", nil), new: nil, want: fwk.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts := world(t)
			pl := newPlugin(t, ts.URL)
			logger, _ := ktesting.NewTestContext(t)
			var oldObj, newObj interface{}
			if tt.old != nil {
				oldObj = tt.old
			}
			if tt.new != nil {
				newObj = tt.new
			}
			got, err := pl.isSchedulableAfterNodeChange(logger, tt.pod, oldObj, newObj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("hint %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	_, ts := world(t)
	ev, err := newPlugin(t, ts.URL).EventsToRegister(context.Background())
	if err != nil || len(ev) != 1 || ev[0].Event.Resource != fwk.Node || ev[0].Event.ActionType&fwk.UpdateNodeAnnotation == 0 || ev[0].QueueingHintFn == nil {
		t.Fatalf("unexpected events %+v, %v", ev, err)
	}
}
