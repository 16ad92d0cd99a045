package apta

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func TestFilter(t *testing.T) {
	cp, ts := world(t)
	if _, err := cp.AddServer("s4"); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Fence("s4"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		wantCode fwk.Code
		wantMsg  string
	}{
		{name: "undeclared: server with no pending acks", pod: aptaPod("f", nil), node: node("n1", "s1"), wantCode: fwk.Success},
		{name: "undeclared: server owing acks for x", pod: aptaPod("f", nil), node: node("n2", "s2"), wantCode: fwk.Unschedulable, wantMsg: "1 pending invalidations"},
		{name: "declared x: server owing acks for x", pod: aptaPod("f", map[string]string{AnnotationInputs: "x"}), node: node("n3", "s3"), wantCode: fwk.Unschedulable, wantMsg: "for input(s) x"},
		{name: "declared y,z: pending for x does not matter", pod: aptaPod("f", map[string]string{AnnotationInputs: "y,z"}), node: node("n3", "s3"), wantCode: fwk.Success},
		{name: "fenced server is always excluded", pod: aptaPod("f", map[string]string{AnnotationInputs: "y"}), node: node("n4", "s4"), wantCode: fwk.Unschedulable, wantMsg: "fenced"},
		// a function placed early reads x with a version, so acks owed for x do not matter
		{name: "placed early: server owing acks for x", pod: aptaPod("f", map[string]string{AnnotationInputs: "x", AnnotationInputVersions: "x=3"}), node: node("n3", "s3"), wantCode: fwk.Success},
		{name: "placed early: fenced server still excluded", pod: aptaPod("f", map[string]string{AnnotationInputs: "x", AnnotationInputVersions: "x=3"}), node: node("n4", "s4"), wantCode: fwk.Unschedulable, wantMsg: "fenced"},
		{name: "node without label", pod: aptaPod("f", nil), node: node("n5", ""), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "no apta.io/compute-server label"},
		{name: "server unknown to the control plane", pod: aptaPod("f", nil), node: node("n6", "s9"), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "unknown to the control plane"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, ts.URL)
			cs := framework.NewCycleState()
			if _, s := pl.PreFilter(context.Background(), cs, tt.pod, nil); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			status := pl.Filter(context.Background(), cs, tt.pod, nodeInfo(tt.node))
			if got := status.Code(); got != tt.wantCode {
				t.Fatalf("code %v, want %v (%v)", got, tt.wantCode, status)
			}
			if tt.wantMsg != "" && !strings.Contains(status.Message(), tt.wantMsg) {
				t.Fatalf("message %q does not contain %q", status.Message(), tt.wantMsg)
			}
		})
	}
}

func TestFilterWithoutPreFilterIsAnError(t *testing.T) {
	_, ts := world(t)
	pl := newPlugin(t, ts.URL)
	s := pl.Filter(context.Background(), framework.NewCycleState(), aptaPod("f", nil), nodeInfo(node("n1", "s1")))
	if s.Code() != fwk.Error {
		t.Fatalf("code %v, want Error", s.Code())
	}
}
