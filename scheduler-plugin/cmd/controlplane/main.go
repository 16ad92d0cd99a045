// Command controlplane serves the conforming control-plane API (pkg/controlplane), logging every
// state change as a JSON line on stdout. Every call is authenticated by a bearer token from
// --token-file and authorized by the caller's role (pkg/controlplane/auth.go); TLS with
// --tls-cert-file and --tls-private-key-file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7400", "address to serve on")
	servers := flag.String("servers", "", "comma-separated compute servers to register at start")
	tokens := flag.String("token-file", "", "callers' bearer tokens, one per line: token,name,role[,server] (roles: reader, failure-detector, object-manager, compute-server, kubelet)")
	insecure := flag.Bool("insecure-no-auth", false, "serve without authentication (every caller may do everything; tests on one host only)")
	cert := flag.String("tls-cert-file", "", "serve TLS with this certificate (PEM)")
	key := flag.String("tls-private-key-file", "", "the certificate's private key (PEM)")
	rejoinRate := flag.Float64("rejoin-rate", controlplane.DefaultRejoinRate, "rejoins per second per server after the burst (0: no limit); over it 429")
	rejoinBurst := flag.Float64("rejoin-burst", controlplane.DefaultRejoinBurst, "rejoins per server at once")
	flag.Parse()
	fail := func(code int, err error) {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(code)
	}
	s := controlplane.NewServer(os.Stdout)
	if !(*rejoinRate >= 0) || !(*rejoinBurst >= 1) {
		fail(2, fmt.Errorf("--rejoin-rate must be >= 0 and --rejoin-burst >= 1 (got %g, %g)", *rejoinRate, *rejoinBurst))
	}
	s.SetRejoinLimit(*rejoinRate, *rejoinBurst)
	switch {
	case *tokens != "":
		a, err := controlplane.LoadTokenFile(*tokens)
		if err != nil {
			fail(2, fmt.Errorf("--token-file: %v", err))
		}
		s.SetAuth(a)
	case !*insecure:
		fail(2, errors.New("--token-file is required (or --insecure-no-auth)"))
	}
	if (*cert == "") != (*key == "") {
		fail(2, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	for _, n := range strings.Split(*servers, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, err := s.AddServer(n); err != nil {
			fail(2, err)
		}
	}
	srv := controlplane.HTTPServer(*addr, s.Handler())
	fmt.Fprintln(os.Stderr, "controlplane: serving on", *addr, "tls:", *cert != "", "auth:", *tokens != "")
	var err error
	if *cert != "" {
		err = srv.ListenAndServeTLS(*cert, *key)
	} else {
		err = srv.ListenAndServe()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fail(1, err)
	}
}
