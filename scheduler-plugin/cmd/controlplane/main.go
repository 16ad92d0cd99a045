// Command controlplane serves the conforming control-plane API (pkg/controlplane) on a
// loopback address, logging every state change as a JSON line on stdout.
package main

import (
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
	flag.Parse()
	s := controlplane.NewServer(os.Stdout)
	for _, n := range strings.Split(*servers, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, err := s.AddServer(n); err != nil {
			fmt.Fprintln(os.Stderr, "controlplane:", err)
			os.Exit(2)
		}
	}
	fmt.Fprintln(os.Stderr, "controlplane: serving on", *addr)
	if err := http.ListenAndServe(*addr, s.Handler()); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}
