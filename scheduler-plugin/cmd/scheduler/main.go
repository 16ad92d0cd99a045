// Command scheduler is kube-scheduler with the Apta plugin compiled in.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/apta/scheduler-plugin/pkg/apta"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(apta.Name, apta.New))
	os.Exit(cli.Run(command))
}
