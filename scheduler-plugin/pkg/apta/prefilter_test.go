package apta

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func TestPreFilter(t *testing.T) {
	cp, ts := world(t)
	seq := cp.Seq()
	tests := []struct {
		name     string
		endpoint string
		pod      *v1.Pod
		down     bool
		wantCode fwk.Code
		wantMsg  string
	}{
		{name: "ungoverned pod is skipped", pod: st.MakePod().Name("plain").Obj(), wantCode: fwk.Skip},
		{name: "undeclared inputs", pod: aptaPod("f", nil), wantCode: fwk.Success},
		{name: "declared inputs", pod: aptaPod("f", map[string]string{AnnotationInputs: "x,y"}), wantCode: fwk.Success},
		{name: "fresh enough", pod: aptaPod("f", map[string]string{AnnotationMinSeq: itoa(seq)}), wantCode: fwk.Success},
		{name: "answer older than the pod requires", pod: aptaPod("f", map[string]string{AnnotationMinSeq: itoa(seq + 1)}), wantCode: fwk.Error, wantMsg: "older than the pod requires"},
		{name: "malformed inputs", pod: aptaPod("f", map[string]string{AnnotationInputs: "x,,y"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "malformed annotation apta.io/inputs"},
		{name: "bad characters in inputs", pod: aptaPod("f", map[string]string{AnnotationInputs: "x y"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "malformed annotation apta.io/inputs"},
		{name: "empty inputs", pod: aptaPod("f", map[string]string{AnnotationInputs: " "}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "empty"},
		{name: "malformed min-seq", pod: aptaPod("f", map[string]string{AnnotationMinSeq: "-1"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "malformed annotation apta.io/min-seq"},
		{name: "malformed predecessor nodes", pod: aptaPod("f", map[string]string{AnnotationPredecessorNodes: "n1,N_2"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "malformed annotation apta.io/predecessor-nodes"},
		{name: "unknown object", pod: aptaPod("f", map[string]string{AnnotationInputs: "x,nosuch"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "unknown input object(s) nosuch"},
		{name: "placed early: input not yet committed", pod: aptaPod("f", map[string]string{AnnotationInputs: "x,later", AnnotationInputVersions: "x=2,later=1"}), wantCode: fwk.Success},
		{name: "versions without inputs", pod: aptaPod("f", map[string]string{AnnotationInputVersions: "x=1"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "declares no inputs"},
		{name: "version 0", pod: aptaPod("f", map[string]string{AnnotationInputs: "x", AnnotationInputVersions: "x=0"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "want a version >= 1"},
		{name: "version of another object", pod: aptaPod("f", map[string]string{AnnotationInputs: "x", AnnotationInputVersions: "x=1,y=1"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "y is not a declared input"},
		{name: "an input without a version", pod: aptaPod("f", map[string]string{AnnotationInputs: "x,y", AnnotationInputVersions: "x=1"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "input y has no version"},
		{name: "malformed versions", pod: aptaPod("f", map[string]string{AnnotationInputs: "x", AnnotationInputVersions: "x:1"}), wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "malformed annotation apta.io/input-versions"},
		{name: "control plane down", pod: aptaPod("f", nil), down: true, wantCode: fwk.Error, wantMsg: "failing closed"},
		{name: "control plane unreachable", endpoint: "http://127.0.0.1:1", pod: aptaPod("f", nil), wantCode: fwk.Error, wantMsg: "failing closed"},
		{name: "unparsable answer", endpoint: garbage(t, 200, "{not json").URL, pod: aptaPod("f", nil), wantCode: fwk.Error, wantMsg: "invalid answer: malformed JSON"},
		{name: "answer without servers", endpoint: garbage(t, 200, `{"seq": 3, "instance": "i"}`).URL, pod: aptaPod("f", nil), wantCode: fwk.Error, wantMsg: "field servers: required, missing"},
		{name: "answer of the wrong type", endpoint: garbage(t, 200, `{"seq": "three", "instance": "i", "servers": []}`).URL, pod: aptaPod("f", nil), wantCode: fwk.Error, wantMsg: "field seq: string where the spec wants uint64"},
		{name: "server error", endpoint: garbage(t, 500, "boom").URL, pod: aptaPod("f", nil), wantCode: fwk.Error, wantMsg: "500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := ts.URL
			if tt.endpoint != "" {
				ep = tt.endpoint
			}
			cp.SetDown(tt.down)
			defer cp.SetDown(false)
			pl := newPlugin(t, ep)
			cs := framework.NewCycleState()
			_, status := pl.PreFilter(context.Background(), cs, tt.pod, nil)
			if got := status.Code(); got != tt.wantCode {
				t.Fatalf("code %v, want %v (%v)", got, tt.wantCode, status)
			}
			if tt.wantMsg != "" && !strings.Contains(status.Message(), tt.wantMsg) {
				t.Fatalf("message %q does not contain %q", status.Message(), tt.wantMsg)
			}
			if tt.wantCode == fwk.Success {
				if _, err := getState(cs); err != nil {
					t.Fatalf("no cycle state written: %v", err)
				}
			}
		})
	}
}

func itoa(u uint64) string { return strconv.FormatUint(u, 10) }
