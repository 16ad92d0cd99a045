package controlplane

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Role is what a caller of the control plane may do (schema/controlplane.yaml,
// securitySchemes). Every authenticated caller may read (GET).
type Role string

const (
	// RoleReader: the scheduler and the mirroring agent; reads only.
	RoleReader Role = "reader"
	// RoleFailureDetector: fence, rejoin, register compute servers.
	RoleFailureDetector Role = "failure-detector"
	// RoleObjectManager: register and remove objects (POST /v1/objects).
	RoleObjectManager Role = "object-manager"
	// RoleComputeServer: a compute server's data-plane events (commit, cache, ack), for the
	// server its token names only: a guest cannot ack for another server.
	RoleComputeServer Role = "compute-server"
	// RoleKubelet: reports function starts (POST /v1/invocations) and, in the emulation, the
	// gets and puts of the functions it runs (commit, cache; never acks); for the server its
	// token names, or any server if it names none.
	RoleKubelet Role = "kubelet"
)

var roles = map[Role]bool{RoleReader: true, RoleFailureDetector: true, RoleObjectManager: true, RoleComputeServer: true, RoleKubelet: true}

// Caller is an authenticated client.
type Caller struct {
	Name   string
	Role   Role
	Server string // the compute server a compute-server or kubelet token is bound to
}

// Auth maps bearer tokens to callers. Tokens are kept as SHA-256 digests and compared in
// constant time.
type Auth struct {
	byDigest map[[sha256.Size]byte]Caller
}

// MinTokenLength is the shortest token accepted (bytes).
const MinTokenLength = 16

// NewAuth returns an empty token table.
func NewAuth() *Auth { return &Auth{byDigest: map[[sha256.Size]byte]Caller{}} }

// Add registers a token for a caller.
func (a *Auth) Add(token string, c Caller) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("token of %s: shorter than %d bytes", c.Name, MinTokenLength)
	}
	if !roles[c.Role] {
		return fmt.Errorf("caller %s: unknown role %q (want reader, failure-detector, object-manager, compute-server or kubelet)", c.Name, c.Role)
	}
	if c.Role == RoleComputeServer && c.Server == "" {
		return fmt.Errorf("caller %s: a compute-server token must name its server", c.Name)
	}
	if c.Server != "" && !ValidObjectName(c.Server) {
		return fmt.Errorf("caller %s: invalid server name %q", c.Name, c.Server)
	}
	d := sha256.Sum256([]byte(token))
	if _, dup := a.byDigest[d]; dup {
		return fmt.Errorf("caller %s: token already assigned", c.Name)
	}
	a.byDigest[d] = c
	return nil
}

// LoadTokens reads a token file, one caller per line, in the manner of kube-apiserver's
// --token-auth-file: token,name,role[,server]; blank lines and lines starting with # are skipped.
func LoadTokens(r io.Reader) (*Auth, error) {
	a := NewAuth()
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, ",")
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("token file line %d: want token,name,role[,server], got %d fields", line, len(f))
		}
		c := Caller{Name: strings.TrimSpace(f[1]), Role: Role(strings.TrimSpace(f[2]))}
		if len(f) == 4 {
			c.Server = strings.TrimSpace(f[3])
		}
		if err := a.Add(strings.TrimSpace(f[0]), c); err != nil {
			return nil, fmt.Errorf("token file line %d: %v", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(a.byDigest) == 0 {
		return nil, fmt.Errorf("token file: no tokens")
	}
	return a, nil
}

// LoadTokenFile is LoadTokens on a file.
func LoadTokenFile(path string) (*Auth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return LoadTokens(f)
}

// authenticate returns the caller of a request's bearer token.
func (a *Auth) authenticate(r *http.Request) (Caller, bool) {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return Caller{}, false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(h[len(p):])))
	for k, c := range a.byDigest { // constant time in the token's content
		if subtle.ConstantTimeCompare(k[:], d[:]) == 1 {
			return c, true
		}
	}
	return Caller{}, false
}

// statusError is an error with its HTTP status (401, 403, 400).
type statusError struct {
	code    int
	msg     string
	apiCode string // ErrorAnswer.Code, if any
}

func (e *statusError) Error() string { return e.msg }

func forbidden(format string, a ...any) error {
	return &statusError{http.StatusForbidden, fmt.Sprintf(format, a...), ""}
}

// allow checks that caller (nil: authentication off) has one of roles; server, if not "", is
// the compute server the call is about and must be the caller's if its token names one.
func allow(c *Caller, server string, roles ...Role) error {
	if c == nil {
		return nil
	}
	ok := false
	for _, r := range roles {
		ok = ok || c.Role == r
	}
	if !ok {
		return forbidden("caller %s (role %s) may not do this: role %s required", c.Name, c.Role, roles[0])
	}
	if c.Server != "" && server != c.Server {
		return forbidden("caller %s acts for compute server %q only, not %q", c.Name, c.Server, server)
	}
	return nil
}

// HTTPServer returns an http.Server for h with every timeout set (a client that sends slowly,
// never reads, or idles cannot hold a connection for long) and headers bounded.
func HTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

// UseCA makes the client trust only the CA certificates in pem (TLS to the control plane).
func (c *Client) UseCA(pem []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("no PEM certificate in the CA file")
	}
	hc := *c.HTTP
	hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Proxy: nil}
	c.HTTP = &hc
	return nil
}
