package e2e

// TestDaemonControlPlane is the e2e with the CXL emulation's memory-server daemon
// (qemu-cxl/daemon) as the control plane instead of the conforming in-memory server: the
// daemon answers from the RTL's state, which changes only by the guests' ring traffic, so no
// emulation endpoint is used. It runs only when started by tests/test_sched_daemon.py, which
// starts the daemon and its guests, then this test (APTA_E2E_ENDPOINT = the daemon), then runs
// workflows through qemu-cxl/executor.py with placements made by this cluster's scheduler.
//
// The test brings up the same cluster as TestScheduler (etcd, kube-apiserver with RBAC, the
// manifests, the scheduler with the manifests' configuration and ServiceAccount, the mirroring
// agent) with one Node per compute server the daemon reports, writes how to reach it to
// APTA_E2E_KUBE (JSON: apiserver, CA, SNI name, a token of ServiceAccount "executor" allowed
// pods in the namespace, the pod template and annotation names), and waits
// until its standard input closes (the driver is done) or APTA_E2E_WAIT passes. Meanwhile it
// records, per node, the state the agent mirrored (fenced, epoch) as it changes. At the end it
// checks every pod the plugin bound carries its placement epoch and sequence number, and writes
// its observations to APTA_E2E_RESULT.
//
// APTA_E2E_PLUGIN=0 runs the scheduler without the plugin (the driver's negative control).
//
// The daemon's API as deployed: with APTA_E2E_CA_FILE (the PEM CA of the daemon's TLS
// certificate; the endpoint is https://) and APTA_E2E_TOKEN_FILE (a reader's bearer token), the
// agent and the plugin use both, and before the real scheduler starts, one with a wrong token and
// one with another CA must fail closed (wrongCredentialsFailClosed; the result's "credentials").

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apta/scheduler-plugin/apis/config"
	"github.com/apta/scheduler-plugin/pkg/agent"
	"github.com/apta/scheduler-plugin/pkg/apta"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
	"github.com/apta/scheduler-plugin/pkg/workflow"
)

const daemonNS = "apta-daemon"

// kubeAccess is what the driver needs to create function pods and read their bindings.
type kubeAccess struct {
	Server      string            `json:"server"`
	CA          string            `json:"ca"`
	ServerName  string            `json:"serverName"`
	Token       string            `json:"token"`
	Namespace   string            `json:"namespace"`
	Plugin      bool              `json:"plugin"`
	Nodes       map[string]string `json:"nodes"` // node -> compute server
	Pod         *v1.Pod           `json:"pod"`   // template: name, labels and annotations are the driver's
	Annotations map[string]string `json:"annotations"`
	Label       string            `json:"label"`
}

// nodeSeen is one change of a node's mirrored state.
type nodeSeen struct {
	T           float64 `json:"t"`
	Node        string  `json:"node"`
	Fenced      string  `json:"fenced"`
	Epoch       string  `json:"epoch"`
	Schedulable string  `json:"schedulable"`
}

func TestDaemonControlPlane(t *testing.T) {
	endpoint := os.Getenv("APTA_E2E_ENDPOINT")
	if endpoint == "" {
		t.Skip("needs the memory-server daemon: run by tests/test_sched_daemon.py (APTA_E2E_ENDPOINT)")
	}
	plugin := os.Getenv("APTA_E2E_PLUGIN") != "0"
	wait := 20 * time.Minute
	if s := os.Getenv("APTA_E2E_WAIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("APTA_E2E_WAIT=%q: %v", s, err)
		}
		wait = d
	}
	cpc := controlplane.NewClient(endpoint, 2*time.Second)
	caFile, tokenFile := os.Getenv("APTA_E2E_CA_FILE"), os.Getenv("APTA_E2E_TOKEN_FILE")
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := cpc.UseCA(pem); err != nil {
			t.Fatalf("APTA_E2E_CA_FILE %s: %v", caFile, err)
		}
	}
	if tokenFile != "" {
		tok, err := config.ReadToken(tokenFile)
		if err != nil {
			t.Fatalf("APTA_E2E_TOKEN_FILE: %v", err)
		}
		cpc.Token = tok
	}
	ctx := context.Background()
	st, err := cpc.Status(ctx)
	if err != nil {
		t.Fatalf("the daemon at %s: %v", endpoint, err)
	}
	var nodes [][2]string
	nodeOf := map[string]string{}
	for _, s := range st.Servers {
		nodes = append(nodes, [2]string{"node-" + s.Name, s.Name})
		nodeOf["node-"+s.Name] = s.Name
	}
	t.Logf("the daemon (instance %s, seq %d) reports %d compute servers", st.Instance, st.Seq, len(nodes))
	c := startClusterNodes(t, nodes)

	// the driver's namespace and ServiceAccount (pods need a default one)
	for _, o := range []func() error{
		func() error {
			_, err := c.admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: daemonNS}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.admin.CoreV1().ServiceAccounts(daemonNS).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.admin.CoreV1().ServiceAccounts(daemonNS).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "executor"}}, metav1.CreateOptions{})
			return err
		},
		func() error { // pods only (the aggregated "edit" role needs kube-controller-manager)
			_, err := c.admin.RbacV1().Roles(daemonNS).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "executor"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"},
					Verbs: []string{"create", "get", "list", "delete"}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.admin.RbacV1().RoleBindings(daemonNS).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "executor"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "executor", Namespace: daemonNS}},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "executor"}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := o(); err != nil {
			t.Fatal(err)
		}
	}

	bg, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	ag := &agent.Agent{Kube: c.clientFor(t, "apta-agent"), CP: cpc, NodeLabel: config.DefaultNodeLabel, Interval: 100 * time.Millisecond}
	if _, err := ag.SyncOnce(ctx); err != nil {
		t.Fatalf("agent against the daemon: %v", err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); ag.Run(bg) }()
	var creds []credsCheck
	if plugin && caFile != "" && tokenFile != "" {
		creds = c.wrongCredentialsFailClosed(t, daemonNS, endpoint, tokenFile, caFile)
	}
	c.startScheduler(t, c.schedulerConfig(t, c.kubeconfig(t, "apta-scheduler"), endpoint, tokenFile, caFile, plugin))

	// what the agent mirrors, as it changes
	var seenMu sync.Mutex
	var seen []nodeSeen
	t0 := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := map[string]nodeSeen{}
		for bg.Err() == nil {
			ns, err := c.admin.CoreV1().Nodes().List(bg, metav1.ListOptions{})
			if err == nil {
				for _, n := range ns.Items {
					a := n.Annotations
					s := nodeSeen{Node: n.Name, Fenced: a[apta.AnnotationNodeFenced], Epoch: a[apta.AnnotationNodeEpoch], Schedulable: a[apta.AnnotationNodeSchedulable]}
					if l, ok := last[n.Name]; !ok || l.Fenced != s.Fenced || l.Epoch != s.Epoch || l.Schedulable != s.Schedulable {
						last[n.Name] = s
						s.T = time.Since(t0).Seconds()
						seenMu.Lock()
						seen = append(seen, s)
						seenMu.Unlock()
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	acc := kubeAccess{Server: c.restCfg.Host, CA: string(c.caData(t)), ServerName: c.restCfg.TLSClientConfig.ServerName,
		Token: c.token(t, daemonNS, "executor"), Namespace: daemonNS, Plugin: plugin, Nodes: nodeOf,
		Pod: workflow.FunctionPod(daemonNS, "template", schedulerName, map[string]string{}), Label: apta.LabelFunction,
		Annotations: map[string]string{"inputs": apta.AnnotationInputs, "predecessorNodes": apta.AnnotationPredecessorNodes,
			"minSeq": apta.AnnotationMinSeq, "minSeqInstance": apta.AnnotationMinSeqInstance,
			"placedEpoch": apta.AnnotationPlacedEpoch, "placedSeq": apta.AnnotationPlacedSeq,
			"inputVersions": apta.AnnotationInputVersions}}
	writeJSON(t, os.Getenv("APTA_E2E_KUBE"), acc)
	t.Logf("cluster up: %d nodes, scheduler plugin %v; waiting for the driver (stdin EOF, at most %v)", len(nodes), plugin, wait)

	eof := make(chan struct{})
	go func() {
		rd := bufio.NewReader(os.Stdin)
		_, _ = io.Copy(io.Discard, rd)
		close(eof)
	}()
	select {
	case <-eof:
	case <-time.After(wait):
		t.Errorf("the driver did not finish within %v", wait)
	}

	pods, err := c.admin.CoreV1().Pods(daemonNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound, perNode := 0, map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		perNode[p.Spec.NodeName]++
		if !plugin {
			continue
		}
		for _, k := range []string{apta.AnnotationPlacedEpoch, apta.AnnotationPlacedSeq} {
			if _, err := strconv.ParseUint(p.Annotations[k], 10, 64); err != nil {
				t.Errorf("pod %s bound to %s: %s = %q", p.Name, p.Spec.NodeName, k, p.Annotations[k])
			}
		}
	}
	seenMu.Lock()
	obs := append([]nodeSeen(nil), seen...)
	seenMu.Unlock()
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].T < obs[j].T })
	t.Logf("%d pods, %d bound (per node %v); %d changes of the mirrored node state", len(pods.Items), bound, perNode, len(obs))
	writeJSON(t, os.Getenv("APTA_E2E_RESULT"), map[string]any{"pods": len(pods.Items), "bound": bound, "perNode": perNode, "nodes": obs,
		"tls": caFile != "", "credentials": creds})
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if path == "" {
		return
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(fmt.Errorf("writing %s: %w", path, err))
	}
}
