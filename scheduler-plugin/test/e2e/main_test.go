// Package e2e runs the Apta scheduler against a real control plane started by the test:
// etcd (embedded, go.etcd.io/etcd/server/v3) and kube-apiserver (in-process, from the same
// k8s.io/kubernetes module) with --authorization-mode=Node,RBAC, on 127.0.0.1 only. The
// scheduler runs as a child process of this test binary (one binary: TestMain re-executes
// itself as kube-scheduler with the plugin) with the manifests' ServiceAccount token and the
// manifests' ConfigMap configuration. Placements are judged from the conforming control
// plane's log (pkg/controlplane): was the server fenced or pending when the pod started?
package e2e

import (
	"os"
	"strings"
	"testing"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/apta/scheduler-plugin/pkg/apta"
)

const (
	roleEnv = "APTA_E2E_ROLE"
	argsEnv = "APTA_E2E_ARGS"
)

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "scheduler" {
		cmd := app.NewSchedulerCommand(app.WithPlugin(apta.Name, apta.New))
		cmd.SetArgs(strings.Split(os.Getenv(argsEnv), "\n"))
		os.Exit(cli.Run(cmd))
	}
	os.Exit(m.Run())
}
