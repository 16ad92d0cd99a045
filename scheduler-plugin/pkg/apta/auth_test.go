package apta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// TestTokenArgs: tokenFile and caFile are read at start; bad ones stop the plugin naming the
// field; with the token the plugin is answered by an authenticating control plane, without it
// (or with a wrong one) it fails closed.
func TestTokenArgs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("token", "scheduler-token-0123456789\n")
	wrong := write("wrong", "another-token-0123456789\n")
	short := write("short", "abc")
	notPEM := write("ca.pem", "not a certificate")
	for _, tc := range []struct{ name, raw, want string }{
		{"missing token file", `{"endpoint":"http://a","tokenFile":"/nonexistent/token"}`, "pluginConfig.args.tokenFile"},
		{"short token", fmt.Sprintf(`{"endpoint":"http://a","tokenFile":%q}`, short), "pluginConfig.args.tokenFile"},
		{"CA with http", fmt.Sprintf(`{"endpoint":"http://a","caFile":%q}`, notPEM), "caFile: Invalid value"},
		{"CA not PEM", fmt.Sprintf(`{"endpoint":"https://a","caFile":%q}`, notPEM), "pluginConfig.args.caFile: no PEM certificate"},
	} {
		if _, err := New(context.Background(), &runtime.Unknown{Raw: []byte(tc.raw)}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	cp, ts := world(t)
	a := controlplane.NewAuth()
	if err := a.Add("scheduler-token-0123456789", controlplane.Caller{Name: "scheduler", Role: controlplane.RoleReader}); err != nil {
		t.Fatal(err)
	}
	cp.SetAuth(a)
	for _, tc := range []struct {
		tokenFile string
		want      fwk.Code
	}{{good, fwk.Success}, {wrong, fwk.Error}, {"", fwk.Error}} {
		raw := fmt.Sprintf(`{"endpoint":%q,"tokenFile":%q}`, ts.URL, tc.tokenFile)
		if tc.tokenFile == "" {
			raw = fmt.Sprintf(`{"endpoint":%q}`, ts.URL)
		}
		p, err := New(context.Background(), &runtime.Unknown{Raw: []byte(raw)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, status := p.(*Apta).PreFilter(context.Background(), framework.NewCycleState(), aptaPod("f", nil), nil)
		if status.Code() != tc.want || (tc.want == fwk.Error && !strings.Contains(status.Message(), "401")) {
			t.Errorf("token file %q: %v, want %v", tc.tokenFile, status, tc.want)
		}
	}
}
