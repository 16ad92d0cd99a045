// Package workflow runs FaaS workflow DAGs on the cluster: Runner creates the pods of a DAG in
// dependency order, annotating each with its inputs, its predecessors' nodes and the control
// plane's commit sequence number when it became ready (s(f) of TLA-C1); Kubelet emulates the
// node agent on clusters without kubelets (it starts bound pods, reports them to the control
// plane, performs their gets and puts and marks them Succeeded).
package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
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

// AnnotationRunMillis is how long the emulated function runs between its gets and its puts
// (read by Kubelet; absent: no time), so that a successor placed early starts while its
// predecessor still runs.
const AnnotationRunMillis = "apta.io/emulated-run-ms"

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

// LoadPattern reads the workflow the scheduler runs for a pattern: the "scheduler" instance of a
// pattern file, workloads/patterns/<pattern>.json, where every layer's instance of the pattern is
// defined (the TLA+ model's, the compute-server models' and this one). Its functions, in the
// file's order, become the DAG; the workflow is named after the pattern. The file is validated
// (Validate); errors name the file.
func LoadPattern(path string) (Workflow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Workflow{}, err
	}
	var doc struct {
		Name      string `json:"name"`
		Scheduler *struct {
			Functions []struct {
				Name   string   `json:"name"`
				After  []string `json:"after"`
				Reads  []string `json:"reads"`
				Writes []string `json:"writes"`
			} `json:"functions"`
		} `json:"scheduler"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Workflow{}, fmt.Errorf("%s: %w", path, err)
	}
	if doc.Scheduler == nil {
		return Workflow{}, fmt.Errorf("%s: pattern %q has no scheduler instance", path, doc.Name)
	}
	w := Workflow{Name: doc.Name}
	for _, f := range doc.Scheduler.Functions {
		w.Funcs = append(w.Funcs, Function{Name: f.Name, Inputs: f.Reads, Outputs: f.Writes, Preds: f.After})
	}
	if err := w.Validate(); err != nil {
		return Workflow{}, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// Validate checks that the functions are listed in a topological order, their names are unique,
// and every input is an output of a function before it in the DAG (so the runner never asks for
// an object nobody committed).
func (w Workflow) Validate() error {
	if len(w.Funcs) == 0 {
		return fmt.Errorf("workflow %q: no functions", w.Name)
	}
	outputs := map[string]map[string]bool{} // function -> the objects it or an ancestor writes
	for _, f := range w.Funcs {
		if _, dup := outputs[f.Name]; dup {
			return fmt.Errorf("workflow %q: function %s listed twice", w.Name, f.Name)
		}
		produced := map[string]bool{}
		for _, p := range f.Preds {
			po, ok := outputs[p]
			if !ok {
				return fmt.Errorf("workflow %q: %s: predecessor %s not listed before it", w.Name, f.Name, p)
			}
			for o := range po {
				produced[o] = true
			}
		}
		for _, in := range f.Inputs {
			if !produced[in] {
				return fmt.Errorf("workflow %q: %s: input %s not produced by a function before it", w.Name, f.Name, in)
			}
		}
		mine := map[string]bool{}
		for o := range produced {
			mine[o] = true
		}
		for _, o := range f.Outputs {
			mine[o] = true
		}
		outputs[f.Name] = mine
	}
	return nil
}

// Runner creates a workflow's pods.
type Runner struct {
	Kube          kubernetes.Interface
	CP            *controlplane.Client
	Namespace     string
	SchedulerName string
	// Declare sets apta.io/inputs on every pod (else the pods declare nothing).
	Declare bool
	// Early places functions early (dataflow invocation): a function whose inputs and
	// outputs each have one writer in the workflow is created as soon as its predecessors are
	// bound (started), not finished, with its predecessors' nodes for locality, and reads with
	// versions (apta.io/input-versions: the version its input's writer will commit). A function
	// touching an object with two writers is created when its predecessors finished: a
	// re-executed first writer's second commit would look like the second's, and a successor's
	// put could overtake a predecessor's read (sim/README.md "Dataflow").
	Early bool
	// RunTime is each function's emulated run time (AnnotationRunMillis).
	RunTime time.Duration
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
	bound := map[string]string{}
	created := map[string]bool{}
	var early map[string]bool
	var versions map[string]uint64
	if r.Early {
		var err error
		if early, versions, err = r.plan(ctx, w, prefix); err != nil {
			return ran, err
		}
	}
	for len(ran) < len(w.Funcs) {
		for _, f := range w.Funcs {
			if created[f.Name] {
				continue
			}
			ready := true
			var predNodes []string
			for _, p := range f.Preds {
				n, ok := ran[p]
				if early[f.Name] {
					n, ok = bound[p]
				}
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
			if r.RunTime > 0 {
				ann[AnnotationRunMillis] = strconv.FormatInt(r.RunTime.Milliseconds(), 10)
			}
			if (r.Declare || early[f.Name]) && len(f.Inputs) > 0 {
				ann[apta.AnnotationInputs] = strings.Join(prefixed(prefix, f.Inputs), ",")
			}
			if early[f.Name] && len(f.Inputs) > 0 {
				vs := make([]string, len(f.Inputs))
				for i, in := range f.Inputs {
					vs[i] = fmt.Sprintf("%s%s=%d", prefix, in, versions[in])
				}
				ann[apta.AnnotationInputVersions] = strings.Join(vs, ",")
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
			if p.Spec.NodeName != "" {
				bound[strings.TrimPrefix(p.Name, prefix)] = p.Spec.NodeName
			}
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

// plan decides which functions are placed early and the version each input's get names: its
// one writer's commit, the object's version when the workflow starts plus one.
func (r *Runner) plan(ctx context.Context, w Workflow, prefix string) (map[string]bool, map[string]uint64, error) {
	writers := map[string]int{}
	for _, f := range w.Funcs {
		for _, o := range f.Outputs {
			writers[o]++
		}
	}
	early, versions := map[string]bool{}, map[string]uint64{}
	for _, f := range w.Funcs {
		ok := true
		for _, o := range append(append([]string{}, f.Inputs...), f.Outputs...) {
			ok = ok && writers[o] == 1
		}
		early[f.Name] = ok
	}
	for o := range writers {
		v0 := uint64(0)
		a, err := r.CP.Object(ctx, prefix+o)
		var ae *controlplane.APIError
		switch {
		case err == nil:
			v0 = a.Version
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		default:
			return nil, nil, fmt.Errorf("reading the version of %s%s: %w", prefix, o, err)
		}
		versions[o] = v0 + 1
	}
	return early, versions, nil
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
				k.started[string(p.UID)] = true
				_, early := p.Annotations[apta.AnnotationInputVersions]
				if _, runs := p.Annotations[AnnotationRunMillis]; early || runs {
					// its gets may wait for their versions, or it runs a while: not in the loop
					// that starts the others
					go func(p *v1.Pod, srv string) {
						if err := k.start(ctx, p, srv); err != nil && ctx.Err() == nil {
							errs(fmt.Errorf("starting %s: %w", p.Name, err))
						}
					}(p.DeepCopy(), srv)
					continue
				}
				if err := k.start(ctx, p, srv); err != nil && ctx.Err() == nil {
					errs(fmt.Errorf("starting %s: %w", p.Name, err))
				}
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
	var versions map[string]uint64
	if v, ok := p.Annotations[apta.AnnotationInputVersions]; ok {
		versions = map[string]uint64{}
		for _, kv := range split(v) {
			obj, ver, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseUint(ver, 10, 64)
			if err != nil {
				return fmt.Errorf("malformed annotation %s=%q", apta.AnnotationInputVersions, v)
			}
			versions[obj] = n
		}
		req.Versions = versions
	}
	if _, err := k.CP.Invoke(ctx, req); err != nil {
		return err
	}
	for _, in := range inputs {
		var err error
		if v, ok := versions[in]; ok {
			_, err = k.CP.CacheAt(ctx, srv, in, v, 20*time.Millisecond) // held until the version commits
		} else {
			_, err = k.CP.Cache(ctx, srv, in)
		}
		if err != nil {
			return err
		}
	}
	if v, ok := p.Annotations[AnnotationRunMillis]; ok {
		ms, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("malformed annotation %s=%q", AnnotationRunMillis, v)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(ms) * time.Millisecond):
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
