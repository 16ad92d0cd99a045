// Package config holds the arguments of the Apta plugin (pluginConfig[].args in the
// KubeSchedulerConfiguration), their defaults and their validation.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// AptaArgs are the arguments of the Apta plugin.
type AptaArgs struct {
	metav1.TypeMeta `json:",inline"`
	// Endpoint of the memory server's control plane (http or https URL). Required.
	Endpoint string `json:"endpoint"`
	// Timeout of one control-plane call (PreFilter fails closed when it expires). Default 1s.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// NodeLabel is the node label whose value names the node's compute server.
	// Default apta.io/compute-server.
	NodeLabel string `json:"nodeLabel,omitempty"`
	// CacheWeight multiplies the number of declared inputs a node's server caches. Default 10.
	CacheWeight *int64 `json:"cacheWeight,omitempty"`
	// PredecessorWeight multiplies the number of the pod's predecessors that ran on a node. Default 1.
	PredecessorWeight *int64 `json:"predecessorWeight,omitempty"`
	// SnapshotTTL is how long one control-plane answer may serve later pods of the same declared
	// inputs, when it is fresh enough for them (its commit sequence number >= the pod's
	// apta.io/min-seq, TLA-C1) and leaves them an eligible server (FRESHNESS.md). 0: ask once per
	// pod. Default 50ms.
	SnapshotTTL *metav1.Duration `json:"snapshotTTL,omitempty"`
	// TokenFile is a file holding the bearer token the plugin presents to the control plane
	// (a reader token; mounted from a Secret). Empty: no token is sent. Read at start.
	TokenFile string `json:"tokenFile,omitempty"`
	// CAFile is a PEM file of the CA(s) the control plane's TLS certificate must chain to (an
	// https endpoint only). Empty: the system's roots.
	CAFile string `json:"caFile,omitempty"`
}

const (
	DefaultTimeout           = time.Second
	DefaultNodeLabel         = "apta.io/compute-server"
	DefaultCacheWeight int64 = 10
	DefaultPredWeight  int64 = 1
	DefaultSnapshotTTL       = 50 * time.Millisecond
)

// SetDefaults fills unset fields.
func SetDefaults(a *AptaArgs) {
	if a.Timeout == nil {
		a.Timeout = &metav1.Duration{Duration: DefaultTimeout}
	}
	if a.NodeLabel == "" {
		a.NodeLabel = DefaultNodeLabel
	}
	if a.SnapshotTTL == nil {
		a.SnapshotTTL = &metav1.Duration{Duration: DefaultSnapshotTTL}
	}
	if a.CacheWeight == nil {
		w := DefaultCacheWeight
		a.CacheWeight = &w
	}
	if a.PredecessorWeight == nil {
		w := DefaultPredWeight
		a.PredecessorWeight = &w
	}
}

// Validate checks defaulted args.
func Validate(a *AptaArgs, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Endpoint == "" {
		errs = append(errs, field.Required(path.Child("endpoint"), "the control plane's URL, e.g. http://127.0.0.1:7400"))
	} else if u, err := url.Parse(a.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, field.Invalid(path.Child("endpoint"), a.Endpoint, "must be an http:// or https:// URL with a host"))
	}
	if a.Timeout != nil && (a.Timeout.Duration <= 0 || a.Timeout.Duration > time.Minute) {
		errs = append(errs, field.Invalid(path.Child("timeout"), a.Timeout.Duration.String(), "must be in (0, 1m]"))
	}
	if a.SnapshotTTL != nil && (a.SnapshotTTL.Duration < 0 || a.SnapshotTTL.Duration > 10*time.Second) {
		errs = append(errs, field.Invalid(path.Child("snapshotTTL"), a.SnapshotTTL.Duration.String(), "must be in [0, 10s]"))
	}
	if a.CAFile != "" {
		if u, err := url.Parse(a.Endpoint); err == nil && u.Scheme != "https" {
			errs = append(errs, field.Invalid(path.Child("caFile"), a.CAFile, "a CA file needs an https:// endpoint"))
		}
	}
	for _, msg := range validation.IsQualifiedName(a.NodeLabel) {
		errs = append(errs, field.Invalid(path.Child("nodeLabel"), a.NodeLabel, msg))
	}
	for name, w := range map[string]*int64{"cacheWeight": a.CacheWeight, "predecessorWeight": a.PredecessorWeight} {
		if w != nil && (*w < 0 || *w > 1000) {
			errs = append(errs, field.Invalid(path.Child(name), *w, "must be in [0, 1000]"))
		}
	}
	return errs
}

// Decode reads the plugin's args (a *runtime.Unknown from the scheduler configuration, or an
// *AptaArgs in tests) strictly: unknown fields are errors. It defaults and validates them.
func Decode(obj runtime.Object) (*AptaArgs, error) {
	a := &AptaArgs{}
	switch o := obj.(type) {
	case nil:
	case *AptaArgs:
		*a = *o
	case *runtime.Unknown:
		raw := o.Raw
		if o.ContentType == runtime.ContentTypeYAML {
			j, err := yaml.YAMLToJSON(raw)
			if err != nil {
				return nil, fmt.Errorf("apta plugin args: %v", err)
			}
			raw = j
		}
		if len(raw) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(a); err != nil {
				return nil, fmt.Errorf("apta plugin args: %v", err)
			}
		}
	default:
		return nil, fmt.Errorf("apta plugin args: want *runtime.Unknown or *AptaArgs, got %T", obj)
	}
	SetDefaults(a)
	if errs := Validate(a, field.NewPath("pluginConfig", "args")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid apta plugin args: %w", errs.ToAggregate())
	}
	return a, nil
}

// MinTokenLength is the shortest bearer token the plugin accepts from its token file.
const MinTokenLength = 16

// ReadToken reads the bearer token in path (surrounding whitespace trimmed).
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < MinTokenLength || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s does not hold one token of at least %d characters", path, MinTokenLength)
	}
	return tok, nil
}

// DeepCopyObject makes AptaArgs a runtime.Object.
func (a *AptaArgs) DeepCopyObject() runtime.Object {
	c := *a
	if a.Timeout != nil {
		t := *a.Timeout
		c.Timeout = &t
	}
	if a.SnapshotTTL != nil {
		t := *a.SnapshotTTL
		c.SnapshotTTL = &t
	}
	if a.CacheWeight != nil {
		w := *a.CacheWeight
		c.CacheWeight = &w
	}
	if a.PredecessorWeight != nil {
		w := *a.PredecessorWeight
		c.PredecessorWeight = &w
	}
	return &c
}
