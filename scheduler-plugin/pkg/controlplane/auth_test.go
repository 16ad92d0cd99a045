package controlplane

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/apta/scheduler-plugin/pkg/controlplane/cptest"
)

const (
	tokReader  = "reader-token-0123456789"
	tokFD      = "fd-token-0123456789abc"
	tokOM      = "om-token-0123456789abc"
	tokS1      = "s1-token-0123456789abc"
	tokS2      = "s2-token-0123456789abc"
	tokKubelet = "kubelet-token-0123456789"
)

const tokenFile = `# token,name,role[,server]
` + tokReader + `,scheduler,reader
` + tokFD + `,failure-detector,failure-detector
` + tokOM + `,object-manager,object-manager
` + tokS1 + `,guest-s1,compute-server,s1
` + tokS2 + `,guest-s2,compute-server,s2
` + tokKubelet + `,kubelet,kubelet
`

// authWorld: s1, s2; x committed by s2 after s1 cached it -> s1 owes an ack for x.
func authWorld(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	cp := NewServer(nil)
	for _, f := range []func() (ChangeAnswer, error){
		func() (ChangeAnswer, error) { return cp.AddServer("s1") },
		func() (ChangeAnswer, error) { return cp.AddServer("s2") },
		func() (ChangeAnswer, error) { return cp.Commit("s2", "x") },
		func() (ChangeAnswer, error) { return cp.Cache("s1", "x") },
		func() (ChangeAnswer, error) { return cp.Commit("s2", "x") },
	} {
		if _, err := f(); err != nil {
			t.Fatal(err)
		}
	}
	a, err := LoadTokens(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	cp.SetAuth(a)
	ts := httptest.NewServer(cp.Handler())
	t.Cleanup(ts.Close)
	return cp, ts
}

func call(t *testing.T, url, method, path, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		var e ErrorAnswer
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Errorf("%s %s: %d without an error body: %q", method, path, resp.StatusCode, b)
		}
	}
	if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("401 without WWW-Authenticate")
	}
	return resp.StatusCode
}

// state is everything a client can observe, minus nothing: seq, servers, the log.
func state(cp *Server) string {
	b, _ := json.Marshal([]any{cp.Schedulable([]string{"x"}), cp.Log()})
	return string(b)
}

// specRoles reads x-apta-roles of every operation of schema/controlplane.yaml (nil: any caller).
func specRoles(t *testing.T) map[string][]Role {
	t.Helper()
	b, err := os.ReadFile("../../../schema/controlplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Roles       []Role `json:"x-apta-roles"`
		} `json:"paths"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	out := map[string][]Role{}
	for _, ops := range spec.Paths {
		for _, op := range ops {
			out[op.OperationID] = op.Roles
		}
	}
	return out
}

// TestAuthRoles: 401 without or with a bad token, 403 for a role the spec's x-apta-roles does not
// list (or a compute-server token of another server), the state unchanged after every refused
// call; the callers the spec allows succeed. Every operation of the spec is called.
func TestAuthRoles(t *testing.T) {
	calls := []struct {
		op, method, path, body, server string
	}{
		{"status", "GET", "/v1/status", "", ""},
		{"schedulable", "GET", "/v1/schedulable?objects=x", "", ""},
		{"object", "GET", "/v1/objects/x", "", ""},
		{"log", "GET", "/v1/log", "", ""},
		{"fence", "POST", "/v1/servers/s1/fence", "{}", ""},
		{"rejoin", "POST", "/v1/servers/s1/rejoin", "{}", ""},
		{"addServer", "POST", "/v1/servers", `{"server":"s9"}`, ""},
		{"registerObject", "POST", "/v1/objects", `{"obj":5,"size":1}`, ""},
		{"ack", "POST", "/v1/ack", `{"server":"s1","object":"x"}`, "s1"},
		{"commit", "POST", "/v1/commit", `{"server":"s1","object":"y"}`, "s1"},
		{"cache", "POST", "/v1/cache", `{"server":"s2","object":"x"}`, "s2"},
		{"invoke", "POST", "/v1/invocations", `{"pod":"p","server":"s2"}`, "s2"},
		{"cancel", "POST", "/v1/cancel", `{"object":"later","version":1}`, ""},
	}
	roles := specRoles(t)
	byRole := map[Role][]string{RoleReader: {tokReader}, RoleFailureDetector: {tokFD}, RoleObjectManager: {tokOM}, RoleKubelet: {tokKubelet}}
	all := []string{tokReader, tokFD, tokOM, tokS1, tokS2, tokKubelet}
	covered := map[string]bool{}
	for _, c := range calls {
		covered[c.op] = true
		t.Run(c.op, func(t *testing.T) {
			rs, ok := roles[c.op]
			if !ok {
				t.Fatalf("operation %s not in the spec", c.op)
			}
			allowed := map[string]bool{}
			if rs == nil {
				for _, tok := range all {
					allowed[tok] = true
				}
			}
			for _, r := range rs {
				for _, tok := range byRole[r] {
					allowed[tok] = true
				}
				if r == RoleComputeServer {
					allowed[map[string]string{"s1": tokS1, "s2": tokS2}[c.server]] = true
				}
			}
			cp, ts := authWorld(t)
			if c.op == "rejoin" {
				if _, err := cp.Fence("s1"); err != nil {
					t.Fatal(err)
				}
			}
			before := state(cp)
			for _, tok := range []string{"", "wrong-token-0123456789", tokReader + "x"} {
				if code := call(t, ts.URL, c.method, c.path, tok, c.body); code != 401 {
					t.Fatalf("token %q: %d, want 401", tok, code)
				}
			}
			for _, tok := range all {
				if allowed[tok] {
					continue
				}
				if code := call(t, ts.URL, c.method, c.path, tok, c.body); code != 403 {
					t.Fatalf("token %s: %d, want 403", tok[:6], code)
				}
			}
			if after := state(cp); after != before {
				t.Fatalf("a refused call changed the state:\n%s\n%s", before, after)
			}
			n := 0
			for _, tok := range all {
				if !allowed[tok] {
					continue
				}
				n++
				if c.op == "rejoin" && n > 1 {
					break
				}
				if code := call(t, ts.URL, c.method, c.path, tok, c.body); code != 200 {
					t.Fatalf("token %s: %d, want 200", tok[:6], code)
				}
			}
			if n == 0 {
				t.Fatal("no caller may make this call")
			}
			if c.method == "POST" && state(cp) == before {
				t.Fatalf("the allowed call changed nothing")
			}
		})
	}
	for op := range roles {
		if !covered[op] {
			t.Errorf("operation %s of the spec is not called by this test", op)
		}
	}
}

// TestRoguePodCannotAck: the rogue-pod attack: a pod with s2's token (or none) acks for s1, which
// stays unschedulable; s1's own ack clears it.
func TestRoguePodCannotAck(t *testing.T) {
	cp, ts := authWorld(t)
	schedulable := func() bool { return cp.Schedulable([]string{"x"}).Servers[0].SchedulableFor }
	if schedulable() {
		t.Fatal("s1 should owe an ack for x")
	}
	for _, body := range []string{`{"server":"s1","object":"x"}`, `{"server":"s1","object":"x","epoch":0}`, `{"server":"s1","object":"x","epoch":1,"count":5}`} {
		if code := call(t, ts.URL, "POST", "/v1/ack", tokS2, body); code != 403 {
			t.Fatalf("s2's token acking for s1: %d", code)
		}
		if code := call(t, ts.URL, "POST", "/v1/ack", "", body); code != 401 {
			t.Fatalf("no token: %d", code)
		}
	}
	if schedulable() {
		t.Fatal("a forged ack made s1 schedulable")
	}
	if code := call(t, ts.URL, "POST", "/v1/ack", tokS1, `{"server":"s1","object":"x"}`); code != 200 || !schedulable() {
		t.Fatalf("s1's own ack: %d, schedulable %v", code, schedulable())
	}
}

func TestLoadTokensErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"", "no tokens"},
		{"short,a,reader", "shorter than 16"},
		{"0123456789abcdef0,a,admin", `unknown role "admin"`},
		{"0123456789abcdef0,a,compute-server", "must name its server"},
		{"0123456789abcdef0,a", "want token,name,role[,server]"},
		{"0123456789abcdef0,a,reader\n0123456789abcdef0,b,reader", "line 2: caller b: token already assigned"},
	} {
		if _, err := LoadTokens(strings.NewReader(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
}

// TestClientSendsToken: the plugin's client authenticates with its token.
func TestClientSendsToken(t *testing.T) {
	_, ts := authWorld(t)
	c := NewClient(ts.URL, time.Second)
	if _, err := c.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without a token: %v", err)
	}
	c.Token = tokReader
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fence(context.Background(), "s1"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("reader fencing: %v", err)
	}
}

// TestHTTPServerTimeouts: a client that never finishes its headers is cut off.
func TestHTTPServerTimeouts(t *testing.T) {
	srv := HTTPServer("127.0.0.1:0", NewServer(nil).Handler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Fatalf("a timeout or bound unset: %+v", srv)
	}
	srv.ReadHeaderTimeout = 200 * time.Millisecond
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_, _ = conn.Write([]byte("GET /v1/status HTTP/1.1\r\nHost: x\r\n")) // never ends the headers
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(bufio.NewReader(conn))
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a slow client held the connection %v", d)
	}
	// Headers over MaxHeaderBytes: 431.
	req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/v1/status", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB of headers: %d", resp.StatusCode)
	}
}

func testCA(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caPEM, cert, err := cptest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return caPEM, cert
}

// TestTLS: a client trusting the test CA talks to the control plane over TLS; one trusting
// another CA (or the system's) does not.
func TestTLS(t *testing.T) {
	caPEM, cert := testCA(t)
	otherPEM, _ := testCA(t)
	cp, _ := authWorld(t)
	ts := httptest.NewUnstartedServer(cp.Handler())
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	ts.StartTLS()
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	c.Token = tokReader
	if err := c.UseCA(caPEM); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	bad := NewClient(ts.URL, time.Second)
	bad.Token = tokReader
	if err := bad.UseCA(otherPEM); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("with another CA: %v", err)
	}
	if err := bad.UseCA([]byte("not pem")); err == nil {
		t.Fatal("a CA file without a certificate accepted")
	}
}
