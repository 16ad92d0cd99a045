// Command agent mirrors the control plane's schedulable state into node annotations.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apta/scheduler-plugin/apis/config"
	"github.com/apta/scheduler-plugin/pkg/agent"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

func main() {
	endpoint := flag.String("endpoint", "http://127.0.0.1:7400", "control-plane URL")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig (empty: in-cluster)")
	interval := flag.Duration("interval", 200*time.Millisecond, "poll interval")
	label := flag.String("node-label", config.DefaultNodeLabel, "node label naming the compute server")
	tokenFile := flag.String("token-file", "", "file holding the agent's bearer token for the control plane (a reader token)")
	caFile := flag.String("ca-file", "", "PEM CA(s) the control plane's TLS certificate must chain to")
	flag.Parse()
	var cfg *rest.Config
	var err error
	if *kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cp := controlplane.NewClient(*endpoint, time.Second)
	if *tokenFile != "" {
		if cp.Token, err = config.ReadToken(*tokenFile); err != nil {
			fmt.Fprintln(os.Stderr, "agent: --token-file:", err)
			os.Exit(2)
		}
	}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err == nil {
			err = cp.UseCA(pem)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "agent: --ca-file:", err)
			os.Exit(2)
		}
	}
	a := &agent.Agent{Kube: kubernetes.NewForConfigOrDie(cfg), CP: cp, NodeLabel: *label, Interval: *interval}
	a.Run(ctx)
}
