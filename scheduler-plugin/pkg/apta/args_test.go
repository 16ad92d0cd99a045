package apta

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestNewArgs(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		ctype   string
		wantErr string
	}{
		{name: "minimal", raw: `{"endpoint":"http://127.0.0.1:7400"}`},
		{name: "full yaml", ctype: runtime.ContentTypeYAML, raw: "endpoint: http://cp:7400\ntimeout: 250ms\nnodeLabel: example.com/server\ncacheWeight: 5\npredecessorWeight: 2\n"},
		{name: "missing endpoint", raw: `{}`, wantErr: "endpoint: Required value"},
		{name: "bad endpoint", raw: `{"endpoint":"127.0.0.1:7400"}`, wantErr: "must be an http:// or https:// URL"},
		{name: "negative timeout", raw: `{"endpoint":"http://a","timeout":"-1s"}`, wantErr: "timeout"},
		{name: "negative snapshot TTL", raw: `{"endpoint":"http://a","snapshotTTL":"-5ms"}`, wantErr: "snapshotTTL"},
		{name: "snapshot TTL too long", raw: `{"endpoint":"http://a","snapshotTTL":"1m"}`, wantErr: "snapshotTTL"},
		{name: "bad label", raw: `{"endpoint":"http://a","nodeLabel":"no spaces allowed"}`, wantErr: "nodeLabel"},
		{name: "bad weight", raw: `{"endpoint":"http://a","cacheWeight":-3}`, wantErr: "cacheWeight"},
		{name: "unknown field", raw: `{"endpoint":"http://a","endpiont":"x"}`, wantErr: "unknown field"},
		{name: "not json", raw: `{endpoint`, wantErr: "apta plugin args"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), &runtime.Unknown{Raw: []byte(tt.raw), ContentType: tt.ctype}, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
