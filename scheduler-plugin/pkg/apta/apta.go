// Package apta is the Apta kube-scheduler plugin: it never places a function on a compute
// server with pending invalidations for the function's inputs (the paper's Scheduling
// Correctness Criterion), and prefers servers that cache the inputs. See FRESHNESS.md.
package apta

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/apta/scheduler-plugin/apis/config"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

const (
	// Name of the plugin in the scheduler configuration.
	Name = "Apta"

	// LabelFunction marks a pod as an apta function (value: the function's name); only such
	// pods are governed by the plugin (and by the admission policy).
	LabelFunction = "apta.io/function"
	// AnnotationInputs declares the pod's input objects, comma separated. Absent: the pod
	// may read anything and is kept off every server with any pending invalidation.
	AnnotationInputs = "apta.io/inputs"
	// AnnotationInputVersions marks a function placed early (dataflow invocation):
	// "obj=version,..." names, for every declared input, the minimum version (the object's commit
	// count) its get waits for. Such a function reads only with versions, a copy older than the
	// version being a miss, so the pending-invalidation rule does not apply to it: only fenced or
	// dead servers are excluded (FRESHNESS.md "Early placement"), and inputs not yet committed are
	// expected.
	AnnotationInputVersions = "apta.io/input-versions"
	// AnnotationPredecessorNodes lists the nodes the pod's DAG predecessors ran on (one
	// entry per predecessor, comma separated), for the locality score.
	AnnotationPredecessorNodes = "apta.io/predecessor-nodes"
	// AnnotationMinSeq is s(f) of TLA-C1: the control plane's commit sequence number when the
	// pod's last predecessor reported completion. Answers older than it are refused.
	AnnotationMinSeq = "apta.io/min-seq"
	// AnnotationMinSeqInstance names the control-plane instance whose sequence number min-seq
	// is: an answer of another instance (the control plane restarted) cannot be compared with
	// it and is refused (fail closed). Absent: not checked.
	AnnotationMinSeqInstance = "apta.io/min-seq-instance"

	// AnnotationPlacedEpoch and AnnotationPlacedSeq are written at binding (Bind): the epoch the
	// control plane's answer gave the chosen compute server, and the answer's commit sequence
	// number. The function must start in that epoch (TLA-C3).
	AnnotationPlacedEpoch = "apta.io/placed-epoch"
	AnnotationPlacedSeq   = "apta.io/placed-seq"

	// Node annotations written by the mirroring agent (pkg/agent): hints for requeueing only.
	AnnotationNodeSchedulable   = "apta.io/schedulable"
	AnnotationNodeFenced        = "apta.io/fenced"
	AnnotationNodePendingObject = "apta.io/pending-objects"
	AnnotationNodePending       = "apta.io/pending"
	AnnotationNodeEpoch         = "apta.io/epoch"
	// PendingObjectsOverflow is the value of AnnotationNodePendingObject when too many objects are pending to list.
	PendingObjectsOverflow = "*"

	stateKey fwk.StateKey = Name
)

// Apta is the plugin.
type Apta struct {
	handle fwk.Handle
	args   *config.AptaArgs
	client *controlplane.Client
	snaps  *snapshots
}

var (
	_ fwk.PreFilterPlugin   = &Apta{}
	_ fwk.FilterPlugin      = &Apta{}
	_ fwk.PreScorePlugin    = &Apta{}
	_ fwk.ScorePlugin       = &Apta{}
	_ fwk.ScoreExtensions   = &Apta{}
	_ fwk.EnqueueExtensions = &Apta{}
	_ fwk.BindPlugin        = &Apta{}
)

// New is the plugin factory.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := config.Decode(obj)
	if err != nil {
		return nil, err
	}
	client := controlplane.NewClient(args.Endpoint, args.Timeout.Duration)
	if args.TokenFile != "" {
		if client.Token, err = config.ReadToken(args.TokenFile); err != nil {
			return nil, fmt.Errorf("invalid apta plugin args: pluginConfig.args.tokenFile: %v", err)
		}
	}
	if args.CAFile != "" {
		pem, err := os.ReadFile(args.CAFile)
		if err == nil {
			err = client.UseCA(pem)
		}
		if err != nil {
			return nil, fmt.Errorf("invalid apta plugin args: pluginConfig.args.caFile: %v", err)
		}
	}
	return &Apta{handle: h, args: args, client: client, snaps: newSnapshots(args.SnapshotTTL.Duration)}, nil
}

// Name returns the plugin's name.
func (pl *Apta) Name() string { return Name }

// podRequest is what the pod's labels and annotations ask of the plugin.
type podRequest struct {
	inputs    []string          // declared inputs; nil: undeclared
	versions  map[string]uint64 // AnnotationInputVersions; nil: the pod reads without versions
	predNodes []string
	minSeq    uint64
	instance  string // of minSeq; "" = any
}

// governed reports whether the plugin applies to the pod.
func governed(p *v1.Pod) bool {
	_, ok := p.Labels[LabelFunction]
	return ok
}

// parsePod reads the pod's annotations; any malformed one is an error naming it.
func parsePod(p *v1.Pod) (*podRequest, error) {
	r := &podRequest{}
	if v, ok := p.Annotations[AnnotationInputs]; ok {
		in, err := controlplane.ParseObjects(v)
		if err != nil {
			return nil, fmt.Errorf("malformed annotation %s=%q: %v", AnnotationInputs, v, err)
		}
		if len(in) == 0 {
			return nil, fmt.Errorf("malformed annotation %s: empty (omit it to declare no inputs)", AnnotationInputs)
		}
		r.inputs = in
	}
	if v, ok := p.Annotations[AnnotationInputVersions]; ok {
		vs, err := parseVersions(v, r.inputs)
		if err != nil {
			return nil, fmt.Errorf("malformed annotation %s=%q: %v", AnnotationInputVersions, v, err)
		}
		r.versions = vs
	}
	if v := strings.TrimSpace(p.Annotations[AnnotationPredecessorNodes]); v != "" {
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
				return nil, fmt.Errorf("malformed annotation %s: node name %q: %s", AnnotationPredecessorNodes, n, strings.Join(msgs, "; "))
			}
			r.predNodes = append(r.predNodes, n)
		}
	}
	if v, ok := p.Annotations[AnnotationMinSeq]; ok {
		s, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed annotation %s=%q: want a non-negative integer", AnnotationMinSeq, v)
		}
		r.minSeq = s
	}
	if v, ok := p.Annotations[AnnotationMinSeqInstance]; ok {
		if v = strings.TrimSpace(v); v == "" || len(v) > 64 {
			return nil, fmt.Errorf("malformed annotation %s=%q: want the control plane's instance id", AnnotationMinSeqInstance, v)
		}
		r.instance = v
	}
	return r, nil
}

// parseVersions reads "obj=version,..." : one version >= 1 for each declared input, no other.
func parseVersions(v string, inputs []string) (map[string]uint64, error) {
	if inputs == nil {
		return nil, fmt.Errorf("the pod declares no inputs (%s)", AnnotationInputs)
	}
	out := map[string]uint64{}
	for _, kv := range strings.Split(v, ",") {
		obj, ver, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("entry %q: want object=version", kv)
		}
		n, err := strconv.ParseUint(ver, 10, 64)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("entry %q: want a version >= 1", kv)
		}
		if !slices.Contains(inputs, obj) {
			return nil, fmt.Errorf("entry %q: %s is not a declared input", kv, obj)
		}
		if _, dup := out[obj]; dup {
			return nil, fmt.Errorf("entry %q: %s twice", kv, obj)
		}
		out[obj] = n
	}
	for _, in := range inputs {
		if _, ok := out[in]; !ok {
			return nil, fmt.Errorf("input %s has no version (a function placed early reads every input with one)", in)
		}
	}
	return out, nil
}

// cycleState is the control-plane answer PreFilter got, shared by Filter and Score.
type cycleState struct {
	req     *podRequest
	seq     uint64
	servers map[string]controlplane.ServerState
	scores  map[string]int64 // raw locality scores by node name (PreScore)
}

func (s *cycleState) Clone() fwk.StateData { return s }

func getState(cs fwk.CycleState) (*cycleState, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycle state: %w", stateKey, err)
	}
	s, ok := d.(*cycleState)
	if !ok {
		return nil, fmt.Errorf("%+v cannot be converted to apta cycle state", d)
	}
	return s, nil
}

func logger(ctx context.Context) klog.Logger { return klog.FromContext(ctx).WithName(Name) }
