package apta

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/apta/scheduler-plugin/apis/config"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// world is a control plane with servers s1..s3 on nodes n1..n3, and objects x, y, z.
//
//	x: committed by s1, cached by s2 and s3, then recommitted by s1 -> s2, s3 owe acks for x
//	y: committed by s2, cached by s1 -> no acks owed
//	z: committed by s3 -> no acks owed
func world(t *testing.T) (*controlplane.Server, *httptest.Server) {
	t.Helper()
	cp := controlplane.NewServer(nil)
	must := func(_ controlplane.ChangeAnswer, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		must(cp.AddServer(s))
	}
	must(cp.Commit("s1", "x"))
	must(cp.Cache("s2", "x"))
	must(cp.Cache("s3", "x"))
	must(cp.Commit("s1", "x"))
	must(cp.Commit("s2", "y"))
	must(cp.Cache("s1", "y"))
	must(cp.Commit("s3", "z"))
	ts := httptest.NewServer(cp.Handler())
	t.Cleanup(ts.Close)
	return cp, ts
}

func newPlugin(t *testing.T, endpoint string) *Apta {
	t.Helper()
	p, err := New(context.Background(), &config.AptaArgs{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Apta)
}

func node(name, server string) *v1.Node {
	w := st.MakeNode().Name(name)
	if server != "" {
		w = w.Label(config.DefaultNodeLabel, server)
	}
	return w.Obj()
}

func nodeInfo(n *v1.Node) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

func aptaPod(name string, ann map[string]string) *v1.Pod {
	w := st.MakePod().Namespace("default").Name(name).UID(name).SchedulerName("apta-scheduler").Label(LabelFunction, name)
	for k, v := range ann {
		w = w.Annotation(k, v)
	}
	return w.Obj()
}

// garbage serves a fixed body with a status code.
func garbage(t *testing.T, code int, body string) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return ts
}
