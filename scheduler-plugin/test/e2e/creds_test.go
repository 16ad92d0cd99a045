package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apta/scheduler-plugin/pkg/controlplane/cptest"
	"github.com/apta/scheduler-plugin/pkg/workflow"
)

// credsCheck is one scheduler run with wrong credentials: what the pod's FailedScheduling event said.
type credsCheck struct {
	Case    string `json:"case"`
	Bound   bool   `json:"bound"`
	Message string `json:"message"`
}

// wrongCredentialsFailClosed is the negative control of the control plane's TLS and tokens (issue
// 16), run before the real scheduler starts (one apta-scheduler at a time): the scheduler with the
// manifests' configuration but a wrong bearer token, then a CA other than the one that signed the
// control plane's certificate, each given one function pod in namespace ns. The plugin must fail
// closed: the pod gets a FailedScheduling event naming the refusal (401, an unknown authority)
// and stays unbound. tokenFile and caFile are the right ones (the token is kept in the wrong-CA
// case, the CA in the wrong-token case).
func (c *cluster) wrongCredentialsFailClosed(t *testing.T, ns, endpoint, tokenFile, caFile string) []credsCheck {
	t.Helper()
	otherCA, _, err := cptest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	otherCAFile, wrongTokenFile := filepath.Join(c.dir, ns+"-other-ca.pem"), filepath.Join(c.dir, ns+"-wrong-token")
	if err := os.WriteFile(otherCAFile, otherCA, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrongTokenFile, []byte(randomToken(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out []credsCheck
	for _, tc := range []struct{ name, token, ca, want string }{
		{"wrong-token", wrongTokenFile, caFile, "401 Unauthorized"},
		{"wrong-ca", tokenFile, otherCAFile, "certificate signed by unknown authority"},
	} {
		stop := c.startScheduler(t, c.schedulerConfig(t, c.kubeconfig(t, "apta-scheduler"), endpoint, tc.token, tc.ca, true))
		name := "creds-" + tc.name
		if _, err := c.admin.CoreV1().Pods(ns).Create(ctx, workflow.FunctionPod(ns, name, schedulerName, map[string]string{}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		msg := ""
		for deadline := time.Now().Add(60 * time.Second); msg == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			evs, err := c.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			if err != nil {
				continue
			}
			for _, e := range evs.Items {
				if e.Reason == "FailedScheduling" && strings.Contains(e.Message, tc.want) {
					msg = e.Message
				}
			}
		}
		p, err := c.admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stop()
		zero := int64(0)
		_ = c.admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		out = append(out, credsCheck{Case: tc.name, Bound: p.Spec.NodeName != "", Message: msg})
		if p.Spec.NodeName != "" {
			t.Fatalf("%s: the pod was bound to %s: the plugin did not fail closed", tc.name, p.Spec.NodeName)
		}
		if msg == "" {
			t.Fatalf("%s: no FailedScheduling event containing %q after 60s (pod phase %s)", tc.name, tc.want, p.Status.Phase)
		}
		if p.Status.Phase != v1.PodPending {
			t.Fatalf("%s: pod phase %s, want Pending", tc.name, p.Status.Phase)
		}
		t.Logf("negative control %s: the pod stays unbound: %s", tc.name, msg)
	}
	return out
}
