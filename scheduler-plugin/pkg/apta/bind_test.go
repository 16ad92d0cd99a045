package apta

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// bindHandle is the part of the framework handle Bind uses: a clientset and the node informer.
type bindHandle struct {
	fwk.Handle
	cs  kubernetes.Interface
	inf informers.SharedInformerFactory
}

func (h *bindHandle) ClientSet() kubernetes.Interface                        { return h.cs }
func (h *bindHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.inf }

func TestBindCarriesTheEpochOfTheAnswer(t *testing.T) {
	cp, ts := world(t)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cp.Fence("s2"))
	must(cp.Rejoin("s2")) // s2 now in epoch 2 (the others still 1)
	pl := newPlugin(t, ts.URL)
	cs := fake.NewSimpleClientset()
	inf := informers.NewSharedInformerFactory(cs, 0)
	for _, n := range []*v1.Node{node("n1", "s1"), node("n2", "s2"), node("n3", "s3")} {
		if err := inf.Core().V1().Nodes().Informer().GetIndexer().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	pl.handle = &bindHandle{cs: cs, inf: inf}
	var bound []*v1.Binding
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "binding" {
			bound = append(bound, a.(k8stesting.CreateAction).GetObject().(*v1.Binding))
			return true, nil, nil
		}
		return false, nil, nil
	})
	ctx := context.Background()
	for _, c := range []struct{ node, epoch string }{{"n2", "2"}, {"n3", "1"}} {
		pod := aptaPod("f-"+c.node, map[string]string{AnnotationInputs: "y"})
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
			t.Fatal(s)
		}
		if s := pl.Bind(ctx, state, pod, c.node); !s.IsSuccess() {
			t.Fatalf("bind to %s: %v", c.node, s)
		}
		b := bound[len(bound)-1]
		if b.Target.Name != c.node || b.Name != pod.Name || b.Annotations[AnnotationPlacedEpoch] != c.epoch || b.Annotations[AnnotationPlacedSeq] == "" {
			t.Fatalf("binding %+v, want node %s, %s=%s and a %s", b, c.node, AnnotationPlacedEpoch, c.epoch, AnnotationPlacedSeq)
		}
	}
	// pods the plugin does not govern go to DefaultBinder
	other := aptaPod("plain", nil)
	other.Spec.SchedulerName = "default-scheduler"
	delete(other.Labels, LabelFunction)
	if s := pl.Bind(ctx, framework.NewCycleState(), other, "n1"); s.Code() != fwk.Skip {
		t.Fatalf("ungoverned pod: %v, want Skip", s)
	}
	// a node unknown to the informer: an error, never a blind binding
	pod := aptaPod("f-x", map[string]string{AnnotationInputs: "y"})
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	n := len(bound)
	if s := pl.Bind(ctx, state, pod, "n9"); s.IsSuccess() || len(bound) != n {
		t.Fatalf("bind to an unknown node: %v, %d bindings", s, len(bound)-n)
	}
}
