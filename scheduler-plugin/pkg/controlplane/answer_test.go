package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apta/scheduler-plugin/pkg/controlplane/cptest"
)

var (
	goodAnswer       = cptest.GoodAnswer
	MalformedAnswers = cptest.MalformedAnswers
)

var asked = []string{"x", "y"}

const daemonAnswer = `{"seq":12,"instance":"apta-memd-1-2","objects":["103"],"unknown":[],"servers":[{"name":"g0","live":true,"fenced":false,"epoch":3,"pending":0,"pendingFor":{},"pendingObjects":[],"pendingObjectsTruncated":false,"caches":["103"],"schedulable":true,"schedulableFor":true}]}`

func TestDecodeSchedulableAnswer(t *testing.T) {
	a, err := DecodeSchedulableAnswer([]byte(goodAnswer), asked)
	if err != nil {
		t.Fatalf("the conforming answer is refused: %v", err)
	}
	if a.Seq != 7 || len(a.Servers) != 2 || a.Servers[1].PendingFor["y"] != 1 {
		t.Fatalf("decoded %+v", a)
	}
	// Unknown fields are allowed (the spec's answers do not forbid them); the order of the echo is free.
	ok := strings.Replace(goodAnswer, `"objects":["x","y"]`, `"objects":["y","x"],"extra":{"a":1}`, 1)
	if _, err := DecodeSchedulableAnswer([]byte(ok), asked); err != nil {
		t.Fatalf("an answer with an extra field and the echo reordered is refused: %v", err)
	}
	// The memory-server daemon's shape (qemu-cxl/daemon/replies.cpp api_schedulable): empty
	// pendingFor, explicit pendingObjectsTruncated.
	if _, err := DecodeSchedulableAnswer([]byte(daemonAnswer), []string{"103"}); err != nil {
		t.Fatalf("the daemon's answer is refused: %v", err)
	}
	// Overall (no objects asked): the echo may be absent.
	if _, err := DecodeSchedulableAnswer([]byte(`{"seq":1,"instance":"i","servers":[]}`), nil); err != nil {
		t.Fatalf("an overall answer is refused: %v", err)
	}
	for _, p := range MalformedAnswers {
		t.Run(p.Name, func(t *testing.T) {
			_, err := DecodeSchedulableAnswer([]byte(p.Body), asked)
			if err == nil {
				t.Fatalf("accepted: %s", p.Body)
			}
			if !strings.Contains(err.Error(), p.Field) {
				t.Fatalf("error %q does not name %q", err, p.Field)
			}
		})
	}
	// Objects in an overall answer are objects not asked.
	if _, err := DecodeSchedulableAnswer([]byte(goodAnswer), nil); err == nil || !strings.Contains(err.Error(), "field objects") {
		t.Fatalf("an answer naming objects to an overall question: %v", err)
	}
}

// TestRequiredMatchesSpec: the fields the decoder requires are the spec's `required:` lists, and
// removing any one of them from a conforming answer gets it refused, naming the field.
func TestRequiredMatchesSpec(t *testing.T) {
	schemas := specSchemas(t)
	for schema, goList := range map[string][]string{
		"SchedulableAnswer": RequiredSchedulableAnswer, "ServerState": RequiredServerState,
		"ChangeAnswer": RequiredChangeAnswer, "ObjectAnswer": RequiredObjectAnswer,
	} {
		inSpec := append([]string(nil), schemas[schema].Required...)
		inGo := append([]string(nil), goList...)
		sort.Strings(inSpec)
		sort.Strings(inGo)
		if len(inSpec) == 0 || !reflect.DeepEqual(inSpec, inGo) {
			t.Errorf("%s: spec requires %v, the decoder %v", schema, inSpec, inGo)
		}
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(goodAnswer), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range schemas["SchedulableAnswer"].Required {
		m := copyMap(top)
		delete(m, k)
		mustRefuse(t, m, k)
	}
	for _, k := range schemas["ServerState"].Required {
		m := copyMap(top)
		srv := m["servers"].([]any)
		s0 := copyMap(srv[0].(map[string]any))
		delete(s0, k)
		m["servers"] = []any{s0, srv[1]}
		mustRefuse(t, m, "servers[0]."+k)
	}
}

func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func mustRefuse(t *testing.T, m map[string]any, field string) {
	t.Helper()
	b, _ := json.Marshal(m)
	_, err := DecodeSchedulableAnswer(b, asked)
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Field != field {
		t.Errorf("without %s: error %v, want one naming the field", field, err)
	}
}

// TestClientRefusesRedirects: a 302 is an error and its Location is never contacted.
func TestClientRefusesRedirects(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(goodAnswer))
	}))
	defer other.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), code)
		}))
		c := NewClient(redir.URL, time.Second)
		_, err := c.Schedulable(context.Background(), asked)
		redir.Close()
		if !errors.Is(err, ErrRedirect) || !strings.Contains(err.Error(), other.URL) {
			t.Errorf("%d: error %v, want a refused redirect naming its Location", code, err)
		}
	}
	// A caller-supplied http.Client without CheckRedirect is not followed either.
	redir := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusFound))
	defer redir.Close()
	c := &Client{Endpoint: redir.URL, HTTP: &http.Client{Timeout: time.Second}}
	if _, err := c.Schedulable(context.Background(), asked); !errors.Is(err, ErrRedirect) {
		t.Errorf("plain http.Client: %v", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target was contacted %d times", n)
	}
}

// TestClientBoundsTheAnswer: an answer over MaxAnswer bytes is refused with a clear error.
func TestClientBoundsTheAnswer(t *testing.T) {
	big := strings.Replace(goodAnswer, `"instance":"i1"`, `"instance":"i1","pad":"`+strings.Repeat("a", 5000)+`"`, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(big)) }))
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	if _, err := c.Schedulable(context.Background(), asked); err != nil {
		t.Fatalf("default bound: %v", err)
	}
	c.MaxAnswer = 4096
	_, err := c.Schedulable(context.Background(), asked)
	if err == nil || !strings.Contains(err.Error(), "answer larger than 4096 bytes") {
		t.Fatalf("error %v, want the bound named", err)
	}
}

// TestClientTimesOut: a control plane that never answers costs one timeout.
func TestClientTimesOut(t *testing.T) {
	block := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(block)
	c := NewClient(ts.URL, 100*time.Millisecond)
	start := time.Now()
	_, err := c.Schedulable(context.Background(), asked)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

// FuzzDecodeAnswer: the decoder never panics, and whatever it accepts re-encodes to an answer it
// accepts again, decoding to the same value (acceptance means a well-formed answer).
func FuzzDecodeAnswer(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzDecodeAnswer/ (TestWriteFuzzSeeds keeps them in step with the probes).
	f.Fuzz(func(t *testing.T, body []byte, objs string) {
		ask, err := ParseObjects(objs)
		if err != nil {
			return
		}
		if json.Valid(body) && fastCheck(body, nil) != (slowCheck(body) == nil) {
			t.Fatalf("fast and slow checks disagree on %q: fast %v, slow %v", body, fastCheck(body, nil), slowCheck(body))
		}
		// What the scan records (the required and case checks act on it) is what encoding/json sees.
		if c := (&collected{}); json.Valid(body) && fastCheck(body, c) {
			fast := shapeOf(c.topObject, c.top, c.servers)
			if slow := shapeByJSON(body); fast != slow {
				t.Fatalf("the scan's keys of %q differ from encoding/json's:\n%s\n%s", body, fast, slow)
			}
		}
		a, err := DecodeSchedulableAnswer(body, ask)
		if err != nil {
			var ae *AnswerError
			if !errors.As(err, &ae) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		re, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("accepted answer does not re-encode: %v", err)
		}
		b, err := DecodeSchedulableAnswer(re, ask)
		if err != nil {
			t.Fatalf("accepted %q, but its re-encoding %q is refused: %v", body, re, err)
		}
		re2, _ := json.Marshal(b)
		if string(re) != string(re2) {
			t.Fatalf("re-encoding is not stable:\n%s\n%s", re, re2)
		}
	})
}

// shapeOf is the keys fastCheck records, in one string: the top-level object's, then each server
// entry's, each sorted, null values marked.
func shapeOf(topObject bool, top keySet, servers []keySet) string {
	if !topObject {
		return "not an object"
	}
	keys := func(k keySet) string {
		out := make([]string, len(k.keys))
		for i, key := range k.keys {
			out[i] = strconv.Quote(key)
			if k.null[i] {
				out[i] += "=null"
			}
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	s := keys(top)
	for _, k := range servers {
		s += " | " + keys(k)
	}
	return s
}

// shapeByJSON is shapeOf for b (one valid JSON value, no key twice) found by encoding/json.
func shapeByJSON(b []byte) string {
	object := func(v []byte) (keySet, bool) {
		var m map[string]json.RawMessage
		if t := bytes.TrimLeft(v, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(v, &m) != nil {
			return keySet{}, false
		}
		var k keySet
		for key, val := range m {
			k.add(key, string(val) == "null")
		}
		return k, true
	}
	top, ok := object(b)
	if !ok {
		return shapeOf(false, top, nil)
	}
	var servers []keySet
	var m map[string]json.RawMessage
	var arr []json.RawMessage
	if json.Unmarshal(b, &m) == nil && json.Unmarshal(m["servers"], &arr) == nil {
		for _, e := range arr {
			if k, ok := object(e); ok {
				servers = append(servers, k)
			}
		}
	}
	return shapeOf(true, top, servers)
}

// TestWriteFuzzSeeds (APTA_WRITE_FUZZ_SEEDS=1) rewrites the committed seed corpus
// testdata/fuzz/FuzzDecodeAnswer/ from the probes; otherwise it checks the corpus holds a seed
// for every probe.
func TestWriteFuzzSeeds(t *testing.T) {
	dir := "testdata/fuzz/FuzzDecodeAnswer"
	seeds := map[string][2]string{
		"conforming":   {goodAnswer, "x,y"},
		"overall":      {`{"seq":1,"instance":"i","servers":[]}`, ""},
		"daemon-style": {daemonAnswer, "103"},
	}
	for _, p := range MalformedAnswers {
		name := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, p.Name)
		seeds["probe-"+name] = [2]string{p.Body, "x,y"}
	}
	for name, s := range seeds {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nstring(%q)\n", s[0], s[1])
		path := filepath.Join(dir, name)
		if os.Getenv("APTA_WRITE_FUZZ_SEEDS") != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("seed %s missing or stale (APTA_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./pkg/controlplane/ rewrites it)", path)
		}
	}
}
