// Package workflow runs FaaS workflow DAGs on the cluster: Runner creates the pods of a DAG in
// dependency order, annotating each with its inputs, its predecessors' nodes and the control
// plane's commit sequence number when it became ready (s(f) of TLA-C1); Kubelet emulates the
// node agent on clusters without kubelets (it starts bound pods, reports them to the control
// plane, performs their gets and puts and marks them Succeeded).
package workflow

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/apta/scheduler-plugin/pkg/apta"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// AnnotationOutputs lists the objects a function puts (read by Kubelet).
const AnnotationOutputs = "apta.io/outputs"

// Function is one node of a workflow DAG.
type Function struct {
	Name    string
	Inputs  []string
	Outputs []string
	Preds   []string
}

// Workflow is a DAG, functions in a topological order.
type Workflow struct {
	Name  string
	Funcs []Function
}

// Pipeline: f0 -> f1 -> ... each reads the previous output and writes its own.
func Pipeline(n int) Workflow {
	w := Workflow{Name: "pipeline"}
	for i := 0; i < n; i++ {
		f := Function{Name: fmt.Sprintf("f%d", i), Outputs: []string{fmt.Sprintf("o%d", i)}}
		if i > 0 {
			f.Inputs = []string{fmt.Sprintf("o%d", i-1)}
			f.Preds = []string{fmt.Sprintf("f%d", i-1)}
		}
		w.Funcs = append(w.Funcs, f)
	}
	return w
}

// Broadcast: p writes x; c0..ck-1 read x.
func Broadcast(k int) Workflow {
	w := Workflow{Name: "broadcast", Funcs: []Function{{Name: "p", Outputs: []string{"x"}}}}
	for i := 0; i < k; i++ {
		w.Funcs = append(w.Funcs, Function{Name: fmt.Sprintf("c%d", i), Inputs: []string{"x"}, Outputs: []string{fmt.Sprintf("y%d", i)}, Preds: []string{"p"}})
	}
	return w
}

// ScatterGather: s writes x; workers read x and write y_i; g reads every y_i and rewrites x.
func ScatterGather(k int) Workflow {
	w := Workflow{Name: "scatter", Funcs: []Function{{Name: "s", Outputs: []string{"x"}}}}
	g := Function{Name: "g", Outputs: []string{"x"}}
	for i := 0; i < k; i++ {
		y := fmt.Sprintf("y%d", i)
		w.Funcs = append(w.Funcs, Function{Name: fmt.Sprintf("w%d", i), Inputs: []string{"x"}, Outputs: []string{y}, Preds: []string{"s"}})
		g.Inputs = append(g.Inputs, y)
		g.Preds = append(g.Preds, fmt.Sprintf("w%d", i))
	}
	w.Funcs = append(w.Funcs, g)
	return w
}

// MapReduce: mappers write partitions; reducers each read one partition of every mapper.
func MapReduce(m, r int) Workflow {
	w := Workflow{Name: "mapreduce"}
	for i := 0; i < m; i++ {
		f := Function{Name: fmt.Sprintf("m%d", i)}
		for j := 0; j < r; j++ {
			f.Outputs = append(f.Outputs, fmt.Sprintf("p%d-%d", i, j))
		}
		w.Funcs = append(w.Funcs, f)
	}
	for j := 0; j < r; j++ {
		f := Function{Name: fmt.Sprintf("r%d", j), Outputs: []string{fmt.Sprintf("out%d", j)}}
		for i := 0; i < m; i++ {
			f.Inputs = append(f.Inputs, fmt.Sprintf("p%d-%d", i, j))
			f.Preds = append(f.Preds, fmt.Sprintf("m%d", i))
		}
		w.Funcs = append(w.Funcs, f)
	}
	return w
}

// Runner creates a workflow's pods.
type Runner struct {
	Kube          kubernetes.Interface
	CP            *controlplane.Client
	Namespace     string
	SchedulerName string
	// Declare sets apta.io/inputs on every pod (else the pods declare nothing).
	Declare bool
	// Timeout bounds the whole workflow.
	Timeout time.Duration
}

// Prefix makes a workflow's object and pod names unique per run.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// Run creates the pods of w (names and objects prefixed by prefix) as their predecessors
// complete, and waits until every pod Succeeded. It returns the node each function ran on.
func (r *Runner) Run(ctx context.Context, w Workflow, prefix string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	ran := map[string]string{}
	created := map[string]bool{}
	for len(ran) < len(w.Funcs) {
		for _, f := range w.Funcs {
			if created[f.Name] {
				continue
			}
			ready := true
			var predNodes []string
			for _, p := range f.Preds {
				n, ok := ran[p]
				ready = ready && ok
				predNodes = append(predNodes, n)
			}
			if !ready {
				continue
			}
			// s(f): every predecessor has completed (its puts committed), so the current
			// sequence number covers every put f depends on (TLA-C1).
			st, err := r.CP.Status(ctx)
			if err != nil {
				return ran, fmt.Errorf("reading s(%s): %w", f.Name, err)
			}
			ann := map[string]string{apta.AnnotationMinSeq: strconv.FormatUint(st.Seq, 10),
				apta.AnnotationMinSeqInstance: st.Instance}
			if len(f.Outputs) > 0 {
				ann[AnnotationOutputs] = strings.Join(prefixed(prefix, f.Outputs), ",")
			}
			if r.Declare && len(f.Inputs) > 0 {
				ann[apta.AnnotationInputs] = strings.Join(prefixed(prefix, f.Inputs), ",")
			}
			if len(predNodes) > 0 {
				ann[apta.AnnotationPredecessorNodes] = strings.Join(predNodes, ",")
			}
			pod := FunctionPod(r.Namespace, prefix+f.Name, r.SchedulerName, ann)
			pod.Labels["apta.io/workflow"] = strings.TrimSuffix(prefix, "-")
			if _, err := r.Kube.CoreV1().Pods(r.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return ran, fmt.Errorf("creating %s: %w", pod.Name, err)
			}
			created[f.Name] = true
		}
		pods, err := r.Kube.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "apta.io/workflow=" + strings.TrimSuffix(prefix, "-")})
		if err != nil {
			return ran, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == v1.PodSucceeded {
				ran[strings.TrimPrefix(p.Name, prefix)] = p.Spec.NodeName
			}
		}
		select {
		case <-ctx.Done():
			return ran, fmt.Errorf("workflow %s%s: %d of %d functions completed: %w", prefix, w.Name, len(ran), len(w.Funcs), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return ran, nil
}

// FunctionPod is an apta function's pod.
func FunctionPod(ns, name, scheduler string, ann map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{apta.LabelFunction: name}, Annotations: ann},
		Spec: v1.PodSpec{
			SchedulerName: scheduler,
			Containers:    []v1.Container{{Name: "fn", Image: "registry.invalid/apta-fn:none"}},
		},
	}
}

// Kubelet emulates node agents: a pod bound to a node is started (reported to the control
// plane, which judges the placement), gets its inputs (becomes a sharer), puts its outputs
// (commits) and is marked Succeeded.
type Kubelet struct {
	Kube      kubernetes.Interface
	CP        *controlplane.Client
	Namespace string
	NodeLabel string
	started   map[string]bool
}

// Run polls until ctx is done.
func (k *Kubelet) Run(ctx context.Context, errs func(error)) {
	k.started = map[string]bool{}
	nodeServer := map[string]string{}
	for ctx.Err() == nil {
		pods, err := k.Kube.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Spec.NodeName == "" || p.Status.Phase != v1.PodPending || k.started[string(p.UID)] {
					continue
				}
				srv, ok := nodeServer[p.Spec.NodeName]
				if !ok {
					n, err := k.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
					if err != nil {
						errs(err)
						continue
					}
					srv = n.Labels[k.NodeLabel]
					nodeServer[p.Spec.NodeName] = srv
				}
				if err := k.start(ctx, p, srv); err != nil && ctx.Err() == nil {
					errs(fmt.Errorf("starting %s: %w", p.Name, err))
				}
				k.started[string(p.UID)] = true
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (k *Kubelet) start(ctx context.Context, p *v1.Pod, srv string) error {
	inputs := split(p.Annotations[apta.AnnotationInputs])
	minSeq, _ := strconv.ParseUint(p.Annotations[apta.AnnotationMinSeq], 10, 64)
	req := controlplane.InvocationRequest{Pod: p.Namespace + "/" + p.Name, Server: srv, Inputs: inputs, MinSeq: minSeq}
	if v, ok := p.Annotations[apta.AnnotationPlacedEpoch]; ok { // written by the plugin's Bind
		e, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("malformed annotation %s=%q", apta.AnnotationPlacedEpoch, v)
		}
		req.Epoch = &e
	}
	if _, err := k.CP.Invoke(ctx, req); err != nil {
		return err
	}
	for _, in := range inputs {
		if _, err := k.CP.Cache(ctx, srv, in); err != nil {
			return err
		}
	}
	for _, out := range split(p.Annotations[AnnotationOutputs]) {
		if _, err := k.CP.Commit(ctx, srv, out); err != nil {
			return err
		}
	}
	p = p.DeepCopy()
	p.Status.Phase = v1.PodSucceeded
	_, err := k.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}
