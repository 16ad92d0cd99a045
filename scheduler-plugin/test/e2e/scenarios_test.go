package e2e

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/apta/scheduler-plugin/apis/config"
	"github.com/apta/scheduler-plugin/pkg/agent"
	"github.com/apta/scheduler-plugin/pkg/apta"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
	"github.com/apta/scheduler-plugin/pkg/controlplane/cptest"
	"github.com/apta/scheduler-plugin/pkg/workflow"
)

const schedulerName = "apta-scheduler"

// bindBound is the bound within which a pod with an eligible node must bind.
const bindBound = 20 * time.Second

// run is one scheduler (with or without the plugin) against a fresh conforming control plane.
type run struct {
	t      *testing.T
	c      *cluster
	plugin bool
	ns     string
	cp     *controlplane.Server
	cpc    *controlplane.Client
	kube   kubernetes.Interface
	rnd    *rand.Rand
	errMu  sync.Mutex
	bgErrs []error
}

func (c *cluster) newRun(t *testing.T, plugin bool) *run {
	ns := "apta-off"
	if plugin {
		ns = "apta-on"
	}
	return c.newRunNS(t, plugin, ns, true)
}

// newRunNS starts a run in namespace ns; kubelet enables the emulated kubelet and the acker.
func (c *cluster) newRunNS(t *testing.T, plugin bool, ns string, kubelet bool) *run {
	logf, err := os.Create(filepath.Join(c.dir, ns+"-controlplane.log"))
	if err != nil {
		t.Fatal(err)
	}
	r := &run{t: t, c: c, plugin: plugin, ns: ns, cp: controlplane.NewServer(logf), kube: c.admin, rnd: rand.New(rand.NewSource(42))}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The control plane as deployed: TLS with a CA made for this run, a bearer token
	// per caller, by role: the scheduler and the agent read, the emulated kubelet reports starts.
	caPEM, cert, err := cptest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(c.dir, ns+"-ca.pem")
	tokens := map[string]string{}
	auth := controlplane.NewAuth()
	for name, role := range map[string]controlplane.Role{"apta-scheduler": controlplane.RoleReader, "apta-agent": controlplane.RoleReader, "kubelet": controlplane.RoleKubelet} {
		tokens[name] = randomToken(t)
		if err := auth.Add(tokens[name], controlplane.Caller{Name: name, Role: role}); err != nil {
			t.Fatal(err)
		}
	}
	tokenFile := filepath.Join(c.dir, ns+"-scheduler-token")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(tokens["apta-scheduler"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.cp.SetAuth(auth)
	srv := controlplane.HTTPServer("", r.cp.Handler())
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close(); logf.Close() })
	endpoint := "https://" + l.Addr().String()
	client := func(name string) *controlplane.Client {
		cl := controlplane.NewClient(endpoint, 2*time.Second)
		if err := cl.UseCA(caPEM); err != nil {
			t.Fatal(err)
		}
		cl.Token = tokens[name]
		return cl
	}
	r.cpc = client("apta-agent")
	if _, err := client("kubelet").Fence(context.Background(), "s1"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("the kubelet's token fencing a server: %v, want 403", err)
	}
	if _, err := controlplane.NewClient(endpoint, 2*time.Second).Status(context.Background()); err == nil {
		t.Fatal("a client without the CA was answered")
	}
	for _, n := range c.nodes {
		if _, err := r.cp.AddServer("s" + strings.TrimPrefix(n, "n")); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := c.admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bg, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	// The mirroring agent, with the manifests' ServiceAccount.
	ag := &agent.Agent{Kube: c.clientFor(t, "apta-agent"), CP: r.cpc, NodeLabel: config.DefaultNodeLabel, Interval: 100 * time.Millisecond}
	if _, err := ag.SyncOnce(ctx); err != nil {
		t.Fatalf("agent with its ServiceAccount: %v", err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); ag.Run(bg) }()
	if kubelet {
		wg.Add(2)
		k := &workflow.Kubelet{Kube: c.admin, CP: client("kubelet"), Namespace: ns, NodeLabel: config.DefaultNodeLabel}
		go func() { defer wg.Done(); k.Run(bg, r.bgErr) }()
		go func() { defer wg.Done(); r.acker(bg) }()
	}
	if plugin && kubelet { // the run with the plugin (not the benchmark's): wrong credentials first
		c.wrongCredentialsFailClosed(t, ns, endpoint, tokenFile, caFile)
	}
	c.startScheduler(t, c.schedulerConfig(t, c.kubeconfig(t, "apta-scheduler"), endpoint, tokenFile, caFile, plugin))
	return r
}

// randomToken is a fresh bearer token (32 random bytes, hex).
func randomToken(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := crand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func (r *run) bgErr(err error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	r.bgErrs = append(r.bgErrs, err)
}

// acker models compute servers acking invalidations asynchronously: an ack owed for an object
// whose name starts with "wf" is retired 100-800 ms after it is first seen.
func (r *run) acker(ctx context.Context) {
	rnd := rand.New(rand.NewSource(7))
	due := map[string]time.Time{}
	for ctx.Err() == nil {
		for _, s := range r.cp.Schedulable(nil).Servers {
			for _, o := range s.PendingObjects {
				if !strings.HasPrefix(o, "wf") {
					continue
				}
				k := s.Name + "/" + o
				d, ok := due[k]
				if !ok {
					due[k] = time.Now().Add(time.Duration(100+rnd.Intn(700)) * time.Millisecond)
				} else if time.Now().After(d) {
					_, _ = r.cp.Ack(s.Name, o, 0, 0)
					delete(due, k)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *run) must(_ controlplane.ChangeAnswer, err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// pend makes server owe an invalidation ack for obj (another server writes obj after server
// got it).
func (r *run) pend(server, obj string) {
	r.t.Helper()
	writer := "s4"
	if server == "s4" {
		writer = "s3"
	}
	if _, ok := r.cp.Object(obj); !ok {
		r.must(r.cp.Commit(writer, obj))
	}
	r.must(r.cp.Cache(server, obj))
	r.must(r.cp.Commit(writer, obj))
}

func (r *run) clear(server, obj string) { r.t.Helper(); r.must(r.cp.Ack(server, obj, 0, 0)) }

type podOpt func(*v1.Pod)

func inputs(objs ...string) podOpt {
	return func(p *v1.Pod) { p.Annotations[apta.AnnotationInputs] = strings.Join(objs, ",") }
}
func pinned(node string) podOpt {
	return func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node} }
}

// prefer makes the listed nodes the default scheduler's choice (the plugin must override it).
func prefer(nodes ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
			Weight: 100, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: nodes}}}}}}}
	}
}

func (r *run) createPod(name string, opts ...podOpt) {
	r.t.Helper()
	p := workflow.FunctionPod(r.ns, name, schedulerName, map[string]string{})
	for _, o := range opts {
		o(p)
	}
	if _, err := r.kube.CoreV1().Pods(r.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		r.t.Fatalf("creating %s: %v", name, err)
	}
}

var errNotBound = errors.New("not bound")

// waitBound waits until the pod is bound; errNotBound after timeout.
func (r *run) waitBound(name string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		p, err := r.kube.CoreV1().Pods(r.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if p.Spec.NodeName != "" {
			return p.Spec.NodeName, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s: %w after %v", name, errNotBound, timeout)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitStarted waits until the emulated kubelet has finished the pod: its start is in the control
// plane's log (the judged event), its gets and puts are done, and it is marked Succeeded (so no
// kubelet call of it can overlap the next scenario).
func (r *run) waitStarted(name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p, err := r.kube.CoreV1().Pods(r.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == v1.PodSucceeded {
			for _, e := range r.cp.Log() {
				if e.Op == "invoke" && e.Pod == r.ns+"/"+name {
					return nil
				}
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("%s not started and finished after %v", name, timeout)
}

// waitEvent waits for an event on the pod with the reason whose message contains want.
func (r *run) waitEvent(pod, reason, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		evs, err := r.kube.CoreV1().Events(r.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err == nil {
			for _, e := range evs.Items {
				if e.Reason == reason && strings.Contains(e.Message, want) {
					return nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no %s event containing %q on %s after %v", reason, want, pod, timeout)
}

// violations are the control plane's verdicts on pods whose name starts with prefix.
func (r *run) violations(prefix string) []controlplane.LogEntry {
	var v []controlplane.LogEntry
	for _, e := range r.cp.Log() {
		if e.Op == "invoke" && e.Violation != "" && strings.HasPrefix(e.Pod, r.ns+"/"+prefix) {
			v = append(v, e)
		}
	}
	return v
}

// result of one scenario: err is a functional failure (a pod that should bind did not, or
// one that should wait did not), violations the control plane's verdicts.
type result struct {
	name       string
	err        error
	violations []controlplane.LogEntry
	note       string
}

type scenario struct {
	name string
	// guarded: with the plugin disabled the scenario must fail (negative control).
	guarded bool
	fn      func(r *run, prefix string) (string, error)
}

var scenarios = []scenario{
	{"pending-node-avoided", true, func(r *run, p string) (string, error) {
		for _, s := range []string{"s1", "s2", "s3"} {
			r.pend(s, p+"obj")
		}
		for i := 0; i < 4; i++ {
			r.createPod(fmt.Sprintf("%s%d", p, i), prefer("n1", "n2", "n3"))
		}
		var onPending int
		for i := 0; i < 4; i++ {
			n, err := r.waitBound(fmt.Sprintf("%s%d", p, i), bindBound)
			if err != nil {
				return "", err
			}
			if n != "n4" {
				onPending++
			}
			if err := r.waitStarted(fmt.Sprintf("%s%d", p, i), 5*time.Second); err != nil {
				return "", err
			}
		}
		for _, s := range []string{"s1", "s2", "s3"} {
			r.clear(s, p+"obj")
		}
		return fmt.Sprintf("%d of 4 pods on pending nodes", onPending), nil
	}},
	{"pinned-pod-waits-then-binds", true, func(r *run, p string) (string, error) {
		r.pend("s1", p+"obj")
		r.createPod(p+"0", pinned("n1"))
		if n, err := r.waitBound(p+"0", 3*time.Second); err == nil {
			_ = r.waitStarted(p+"0", 5*time.Second)
			r.clear("s1", p+"obj")
			return "", fmt.Errorf("bound to %s while its server had a pending invalidation", n)
		}
		cleared := time.Now()
		r.clear("s1", p+"obj")
		if _, err := r.waitBound(p+"0", 10*time.Second); err != nil {
			return "", err
		}
		lat := time.Since(cleared)
		return fmt.Sprintf("bound %v after the invalidation cleared", lat.Round(time.Millisecond)), r.waitStarted(p+"0", 5*time.Second)
	}},
	{"declared-inputs-narrow-exclusion", true, func(r *run, p string) (string, error) {
		r.pend("s1", p+"q")
		r.must(r.cp.Commit("s2", p+"r"))
		r.createPod(p+"reads-r", pinned("n1"), inputs(p+"r"))
		if _, err := r.waitBound(p+"reads-r", bindBound); err != nil {
			return "", fmt.Errorf("a pod reading only r must bind to a node pending only for q: %w", err)
		}
		r.createPod(p+"reads-q", pinned("n1"), inputs(p+"q"))
		if n, err := r.waitBound(p+"reads-q", 3*time.Second); err == nil {
			_ = r.waitStarted(p+"reads-q", 5*time.Second)
			r.clear("s1", p+"q")
			return "", fmt.Errorf("pod reading q bound to %s while pending for q", n)
		}
		r.clear("s1", p+"q")
		if _, err := r.waitBound(p+"reads-q", bindBound); err != nil {
			return "", err
		}
		if err := r.waitStarted(p+"reads-r", 5*time.Second); err != nil {
			return "", err
		}
		return "", r.waitStarted(p+"reads-q", 5*time.Second)
	}},
	{"fenced-node-never-used", true, func(r *run, p string) (string, error) {
		r.must(r.cp.Fence("s2"))
		defer func() { r.must(r.cp.Rejoin("s2")) }()
		onFenced := 0
		for i := 0; i < 3; i++ {
			r.createPod(fmt.Sprintf("%s%d", p, i), prefer("n2"))
		}
		for i := 0; i < 3; i++ {
			n, err := r.waitBound(fmt.Sprintf("%s%d", p, i), bindBound)
			if err != nil {
				return "", err
			}
			if n == "n2" {
				onFenced++
			}
			if err := r.waitStarted(fmt.Sprintf("%s%d", p, i), 5*time.Second); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("%d of 3 pods on the fenced node", onFenced), nil
	}},
	{"locality-honoured", false, func(r *run, p string) (string, error) {
		r.must(r.cp.Commit("s3", p+"in"))
		r.createPod(p+"0", inputs(p+"in"))
		n, err := r.waitBound(p+"0", bindBound)
		if err != nil {
			return "", err
		}
		if err := r.waitStarted(p+"0", 5*time.Second); err != nil {
			return "", err
		}
		if r.plugin && n != "n3" {
			return "", fmt.Errorf("bound to %s, want n3 (the only server caching the input)", n)
		}
		return "bound to " + n, nil
	}},
	{"control-plane-down-then-recovery", true, func(r *run, p string) (string, error) {
		r.cp.SetDown(true)
		// a snapshot younger than snapshotTTL may still serve a pod (FRESHNESS.md): wait it out
		time.Sleep(2 * config.DefaultSnapshotTTL)
		r.createPod(p + "0")
		if n, err := r.waitBound(p+"0", 3*time.Second); err == nil {
			r.cp.SetDown(false)
			return "", fmt.Errorf("placed on %s while the control plane could not be asked", n)
		}
		up := time.Now()
		r.cp.SetDown(false)
		if _, err := r.waitBound(p+"0", bindBound); err != nil {
			return "", err
		}
		return fmt.Sprintf("bound %v after recovery", time.Since(up).Round(time.Millisecond)), r.waitStarted(p+"0", 5*time.Second)
	}},
	{"bad-input-is-an-event-not-a-placement", false, func(r *run, p string) (string, error) {
		r.createPod(p+"malformed", inputs("x y"))
		r.createPod(p+"unknown", inputs(p+"never-committed"))
		defer func() { // the next run's scheduler must not see them
			for _, n := range []string{p + "malformed", p + "unknown"} {
				_ = r.kube.CoreV1().Pods(r.ns).Delete(context.Background(), n, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
			}
		}()
		if !r.plugin {
			return "", nil
		}
		for _, c := range []struct{ pod, want string }{{p + "malformed", "malformed annotation apta.io/inputs"}, {p + "unknown", "unknown input object(s) " + p + "never-committed"}} {
			if n, err := r.waitBound(c.pod, 2*time.Second); err == nil {
				return "", fmt.Errorf("%s placed on %s", c.pod, n)
			}
			if err := r.waitEvent(c.pod, "FailedScheduling", c.want, 10*time.Second); err != nil {
				return "", err
			}
		}
		return "FailedScheduling events name the bad annotation and the unknown object", nil
	}},
	// random-workflows is counted in the negative control's total, not required to fail on its own.
	{"random-workflows", false, func(r *run, p string) (string, error) {
		// Random pending sets: noise invalidations on random servers, acked 100-800 ms later.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for i := 0; ctx.Err() == nil; i++ {
				s := fmt.Sprintf("s%d", 1+r.rnd.Intn(3))
				r.pendQuiet(s, fmt.Sprintf("wf-noise%d", r.rnd.Intn(4)))
				time.Sleep(time.Duration(50+r.rnd.Intn(150)) * time.Millisecond)
			}
		}()
		// the patterns' scheduler instances (workloads/patterns/<pattern>.json, one definition per pattern)
		var wfs []workflow.Workflow
		for _, n := range []string{"pipeline", "broadcast", "scatter-gather", "map-reduce"} {
			w, err := workflow.LoadPattern(filepath.Join(patternsDir, n+".json"))
			if err != nil {
				return "", err
			}
			wfs = append(wfs, w)
		}
		funcs, declared := 0, 0
		for round := 0; round < 3; round++ {
			for i, w := range wfs {
				runner := &workflow.Runner{Kube: r.kube, CP: r.cpc, Namespace: r.ns, SchedulerName: schedulerName, Declare: r.rnd.Intn(2) == 0, Timeout: 60 * time.Second}
				ran, err := runner.Run(context.Background(), w, fmt.Sprintf("wf%d%d-", round, i))
				funcs += len(ran)
				if err != nil {
					return fmt.Sprintf("%d functions", funcs), fmt.Errorf("%s (declared=%v): %w", w.Name, runner.Declare, err)
				}
				if runner.Declare {
					declared++
				}
			}
		}
		return fmt.Sprintf("12 workflows (%d with declared inputs), %d functions", declared, funcs), nil
	}},
	// early placement: successors created when their predecessors start, reading with versions; their
	// gets are held by the control plane until the version commits. Not guarded: a versioned read
	// needs no rule, so the default scheduler logs no violation either.
	{"early-placement", false, func(r *run, p string) (string, error) {
		early, heldFirst := 0, 0
		var tEarly, tAfter time.Duration
		for i, n := range []string{"pipeline", "broadcast", "scatter-gather", "map-reduce"} {
			w, err := workflow.LoadPattern(filepath.Join(patternsDir, n+".json"))
			if err != nil {
				return "", err
			}
			prefix := fmt.Sprintf("%s%d-", p, i)
			for _, o := range []string{"s1", "s2", "s3"} { // a pending invalidation on every server
				r.pendQuiet(o, prefix+"noise")
			}
			// the same workflow placed after completion, for the makespan ratio (reported, not asserted)
			after := &workflow.Runner{Kube: r.kube, CP: r.cpc, Namespace: r.ns, SchedulerName: schedulerName, Declare: true, RunTime: 300 * time.Millisecond, Timeout: 60 * time.Second}
			t0 := time.Now()
			if _, err := after.Run(context.Background(), w, prefix+"after-"); err != nil {
				return "", fmt.Errorf("%s after completion: %w", w.Name, err)
			}
			tAfter += time.Since(t0)
			runner := &workflow.Runner{Kube: r.kube, CP: r.cpc, Namespace: r.ns, SchedulerName: schedulerName, Early: true, RunTime: 300 * time.Millisecond, Timeout: 60 * time.Second}
			t0 = time.Now()
			if _, err := runner.Run(context.Background(), w, prefix); err != nil {
				return "", fmt.Errorf("%s early: %w", w.Name, err)
			}
			tEarly += time.Since(t0)
			// from the log: a function started (invoke) before one of its inputs was committed
			commitSeq := map[string]uint64{}
			for _, e := range r.cp.Log() {
				if e.Op == "commit" && strings.HasPrefix(e.Object, prefix) {
					if _, ok := commitSeq[e.Object]; !ok {
						commitSeq[e.Object] = e.Seq
					}
				}
			}
			for _, e := range r.cp.Log() {
				if e.Op != "invoke" || !strings.HasPrefix(e.Pod, r.ns+"/"+prefix) || strings.HasPrefix(e.Pod, r.ns+"/"+prefix+"after-") {
					continue
				}
				pod, err := r.kube.CoreV1().Pods(r.ns).Get(context.Background(), strings.TrimPrefix(e.Pod, r.ns+"/"), metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				if _, ok := pod.Annotations[apta.AnnotationInputVersions]; ok {
					early++
				}
				for _, in := range e.Inputs {
					if c, ok := commitSeq[in]; ok && c > e.Seq {
						heldFirst++
						break
					}
				}
			}
		}
		if heldFirst == 0 {
			return "", fmt.Errorf("no function started before its input was committed: nothing was placed early")
		}
		return fmt.Sprintf("4 workflows, %d functions placed early, %d started before an input was committed (their gets held); "+
			"makespan summed over the 4 with 300 ms functions: after completion %.2f s, early %.2f s (ratio %.2f)",
			early, heldFirst, tAfter.Seconds(), tEarly.Seconds(), tAfter.Seconds()/tEarly.Seconds()), nil
	}},
}

// pendQuiet is pend without failing the test (it runs in a goroutine).
func (r *run) pendQuiet(server, obj string) {
	if _, ok := r.cp.Object(obj); !ok {
		_, _ = r.cp.Commit("s4", obj)
	}
	_, _ = r.cp.Cache(server, obj)
	_, _ = r.cp.Commit("s4", obj)
}

func (r *run) runAll() []result {
	var out []result
	for i, s := range scenarios {
		prefix := fmt.Sprintf("sc%d-", i)
		if s.name == "random-workflows" {
			prefix = "wf"
		}
		start := time.Now()
		note, err := s.fn(r, prefix)
		res := result{name: s.name, err: err, violations: r.violations(prefix), note: note}
		r.t.Logf("%-34s %6.2fs violations=%d err=%v %s", s.name, time.Since(start).Seconds(), len(res.violations), err, note)
		out = append(out, res)
	}
	return out
}

func TestScheduler(t *testing.T) {
	start := time.Now()
	c := startCluster(t, 4)

	t.Run("admission-policy-rejects-bypasses", func(t *testing.T) { testAdmission(t, c) })

	t.Run("plugin-enabled", func(t *testing.T) {
		r := c.newRun(t, true)
		for _, res := range r.runAll() {
			if res.err != nil {
				t.Errorf("%s: %v", res.name, res.err)
			}
			for _, v := range res.violations {
				t.Errorf("%s: control plane logged a violation: seq %d pod %s on %s: %s", res.name, v.Seq, v.Pod, v.Server, v.Violation)
			}
		}
		for _, err := range r.bgErrs {
			t.Errorf("emulated kubelet: %v", err)
		}
		// every pod the plugin bound carries the placement's epoch (Bind, TLA-C3), copied from
		// the Binding by the apiserver, and the kubelet started it in that epoch (no violation above)
		pods, err := r.kube.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			n++
			if _, ok := p.Annotations[apta.AnnotationPlacedEpoch]; !ok {
				t.Errorf("pod %s bound to %s without %s", p.Name, p.Spec.NodeName, apta.AnnotationPlacedEpoch)
			}
		}
		t.Logf("%d bound pods, each with its placement epoch", n)
	})

	t.Run("negative-control-plugin-disabled", func(t *testing.T) {
		r := c.newRun(t, false)
		total := 0
		for _, res := range r.runAll() {
			total += len(res.violations)
			if s := find(res.name); s.guarded && res.err == nil && len(res.violations) == 0 {
				t.Errorf("%s passed without the plugin: the scenario does not test the plugin", res.name)
			}
		}
		t.Logf("negative control: %d violations logged by the control plane", total)
		if total == 0 {
			t.Errorf("no violations without the plugin")
		}
	})
	t.Logf("e2e total %v", time.Since(start).Round(time.Millisecond))
}

func find(name string) scenario {
	for _, s := range scenarios {
		if s.name == name {
			return s
		}
	}
	return scenario{}
}

func testAdmission(t *testing.T, c *cluster) {
	ctx := context.Background()
	ns := "apta-admission"
	if _, err := c.admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		mutate  func(*v1.Pod)
		allowed bool
	}{
		{"other scheduler", func(p *v1.Pod) { p.Spec.SchedulerName = "default-scheduler" }, false},
		{"preset nodeName", func(p *v1.Pod) { p.Spec.NodeName = "n1" }, false},
		{"apta scheduler", func(p *v1.Pod) {}, true},
		{"unlabelled pod with another scheduler", func(p *v1.Pod) { delete(p.Labels, apta.LabelFunction); p.Spec.SchedulerName = "default-scheduler" }, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deadline := time.Now().Add(20 * time.Second) // the policy takes effect asynchronously
			for {
				p := workflow.FunctionPod(ns, fmt.Sprintf("adm%d-%d", i, time.Now().UnixNano()%100000), schedulerName, nil)
				tc.mutate(p)
				_, err := c.admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
				if tc.allowed {
					if err != nil {
						t.Fatalf("rejected: %v", err)
					}
					_ = c.admin.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
					return
				}
				if err != nil {
					if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
						t.Fatalf("rejected for another reason: %v", err)
					}
					if !strings.Contains(err.Error(), "apta functions") {
						t.Fatalf("rejected without the policy's message: %v", err)
					}
					t.Logf("rejected: %v", err)
					return
				}
				_ = c.admin.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
				if time.Now().After(deadline) {
					t.Fatalf("admitted after 20s: the policy does not reject it")
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}
