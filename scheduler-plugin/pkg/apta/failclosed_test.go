package apta

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/apta/scheduler-plugin/pkg/controlplane/cptest"
)

// place runs PreFilter and, if it passes, Filter on every node; it returns the nodes that pass
// and the PreFilter status.
func place(t *testing.T, endpoint string, pod *v1.Pod, nodes ...*v1.Node) ([]string, *fwk.Status) {
	t.Helper()
	pl := newPlugin(t, endpoint)
	cs := framework.NewCycleState()
	_, status := pl.PreFilter(context.Background(), cs, pod, nil)
	var passed []string
	for _, n := range nodes {
		if pl.Filter(context.Background(), cs, pod, nodeInfo(n)).IsSuccess() {
			passed = append(passed, n.Name)
		}
	}
	return passed, status
}

// TestMalformedAnswerFailsClosed: every malformed answer of cptest.MalformedAnswers leaves the pod
// with no node, PreFilter's status naming the field; the conforming answer places it on n1.
func TestMalformedAnswerFailsClosed(t *testing.T) {
	pod := aptaPod("f", map[string]string{AnnotationInputs: "x,y"})
	nodes := []*v1.Node{node("n1", "s1"), node("n2", "s2")}
	passed, status := place(t, garbage(t, 200, cptest.GoodAnswer).URL, pod, nodes...)
	if !status.IsSuccess() || len(passed) != 1 || passed[0] != "n1" {
		t.Fatalf("conforming answer: status %v, nodes %v; want n1", status, passed)
	}
	for _, p := range cptest.MalformedAnswers {
		t.Run(p.Name, func(t *testing.T) {
			passed, status := place(t, garbage(t, 200, p.Body).URL, pod, nodes...)
			if len(passed) != 0 {
				t.Fatalf("placed on %v", passed)
			}
			if status.Code() != fwk.Error || !strings.Contains(status.Message(), "failing closed") || !strings.Contains(status.Message(), p.Field) {
				t.Fatalf("status %v, want an Error failing closed naming %q", status, p.Field)
			}
		})
	}
}

// TestRedirectFailsClosed: a 302 from the endpoint places nothing and its Location is never asked.
func TestRedirectFailsClosed(t *testing.T) {
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(cptest.GoodAnswer))
	}))
	defer other.Close()
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer redir.Close()
	passed, status := place(t, redir.URL, aptaPod("f", map[string]string{AnnotationInputs: "x,y"}), node("n1", "s1"), node("n2", "s2"))
	if len(passed) != 0 || status.Code() != fwk.Error || !strings.Contains(status.Message(), "302 Found") || !strings.Contains(status.Message(), "redirect refused") {
		t.Fatalf("nodes %v, status %v", passed, status)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the Location was contacted %d times", n)
	}
}
