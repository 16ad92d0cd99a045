package controlplane

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Strict answer decoding: the plugin acts on an answer only if it is exactly one JSON value
// with no duplicate keys at any depth, every field schema/controlplane.yaml marks required is
// present (and not null), no server is listed twice, and the objects it speaks about are the
// objects asked. Anything else is an error naming the field; the plugin then fails closed.
// Unknown fields are allowed: the spec's answer schemas do not set additionalProperties: false.

// Required fields of the answers, as schema/controlplane.yaml lists them (`required:`);
// TestRequiredMatchesSpec keeps the two equal.
var (
	RequiredSchedulableAnswer = []string{"seq", "instance", "servers"}
	RequiredServerState       = []string{"name", "live", "fenced", "epoch", "pending", "schedulable", "schedulableFor"}
	RequiredChangeAnswer      = []string{"seq", "instance"}
	RequiredRegisterAnswer    = []string{"seq", "instance", "object", "base"}
	RequiredObjectAnswer      = []string{"seq", "instance", "object", "version", "sharers"}
)

// MaxNesting bounds the depth of an answer's JSON (the schemas need 4).
const MaxNesting = 16

// AnswerError is a rejected answer; Field names the offending field ("" for the document).
type AnswerError struct {
	Field string
	Msg   string
}

func (e *AnswerError) Error() string {
	if e.Field == "" {
		return "invalid answer: " + e.Msg
	}
	return "invalid answer: field " + e.Field + ": " + e.Msg
}

func answerErr(field, format string, a ...any) error {
	return &AnswerError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// CheckJSON accepts b only if it is exactly one JSON value (whitespace around it allowed),
// nested at most MaxNesting deep, with no object holding the same key twice. encoding/json
// alone would let the last duplicate win and would ignore nothing after a Decoder's value.
func CheckJSON(b []byte) error { return checkJSON(b, nil) }

func checkJSON(b []byte, c *collected) error {
	if json.Valid(b) && fastCheck(b, c) {
		return nil
	}
	// Slow path, on bad input only: the token walk finds the same fault and names its field.
	if err := slowCheck(b); err != nil {
		return err
	}
	return answerErr("", "the key scan and the token walk disagree") // FuzzDecodeAnswer: never
}

// keySet is the keys of one JSON object, with whether each one's value is null.
type keySet struct {
	keys []string
	null []bool
}

func (k *keySet) add(key string, null bool) {
	k.keys = append(k.keys, key)
	k.null = append(k.null, null)
}

// collected is what fastCheck records of an answer's shape: the top-level object's keys and
// those of every object in its "servers" array.
type collected struct {
	topObject bool
	top       keySet
	servers   []keySet
}

// slowCheck is CheckJSON by a json.Decoder token walk (FuzzDecodeAnswer: it agrees with fastCheck).
func slowCheck(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := walkValue(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return answerErr("", "trailing data after the JSON value (at byte %d)", dec.InputOffset())
	}
	return nil
}

// fastCheck reports whether b, known to be one valid JSON value, nests at most MaxNesting
// deep and holds no object with a key twice (keys compared as encoding/json decodes them).
//
// It stands in for encoding/json's token walk (slowCheck) because the plugin decodes an answer on
// every control-plane call (every pod with snapshotTTL 0) and the walk does not fit the per-pod
// budget: 10 % of the scheduler's own cycle, about 0.34 ms of 3.4 ms (README, 100 nodes).
// BenchmarkDecodeAnswer measured the walk at 3.5-4.0x the CPU of json.Valid plus this scan:
// +0.95, +9.9 and +51 ms per answer for 100, 1,000 and 5,000 nodes.
func fastCheck(b []byte, c *collected) bool {
	const (
		other = iota
		topObj
		serversArr
		serverObj
	)
	type frame struct {
		obj, keyNext bool
		role         int
		lastKey      string
		few          []string // keys while few; then many
		many         map[string]struct{}
	}
	stack := make([]frame, 0, 8)
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			if len(stack) >= MaxNesting {
				return false
			}
			f := frame{obj: b[i] == '{', keyNext: b[i] == '{'}
			if c != nil {
				n := len(stack)
				switch {
				case n == 0 && f.obj:
					f.role, c.topObject = topObj, true
				case n > 0 && !f.obj && stack[n-1].role == topObj && stack[n-1].lastKey == "servers":
					f.role = serversArr
				case n > 0 && f.obj && stack[n-1].role == serversArr:
					f.role = serverObj
					c.servers = append(c.servers, keySet{})
				}
			}
			stack = append(stack, f)
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.obj {
				top.keyNext = true
			}
		case '"':
			j := i + 1
			esc := false // the key needs decoding as encoding/json does it: an escape or a non-ASCII byte
			for ; b[j] != '"'; j++ {
				if b[j] == '\\' {
					esc = true
					j++
				} else if b[j] >= utf8.RuneSelf {
					esc = true // invalid UTF-8 decodes to U+FFFD, so "\xff" and "\xfe" are one key
				}
			}
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].keyNext {
				top := &stack[n-1]
				top.keyNext = false
				k := string(b[i+1 : j])
				if esc {
					if json.Unmarshal(b[i:j+1], &k) != nil {
						return false
					}
				}
				if c != nil && (top.role == topObj || top.role == serverObj) {
					top.lastKey = k
					v := j + 1
					for b[v] != ':' {
						v++
					}
					for v++; b[v] == ' ' || b[v] == '\t' || b[v] == '\n' || b[v] == '\r'; v++ {
					}
					if top.role == topObj {
						c.top.add(k, b[v] == 'n')
					} else {
						c.servers[len(c.servers)-1].add(k, b[v] == 'n')
					}
				}
				if top.many != nil {
					if _, dup := top.many[k]; dup {
						return false
					}
					top.many[k] = struct{}{}
				} else {
					for _, o := range top.few {
						if o == k {
							return false
						}
					}
					top.few = append(top.few, k)
					if len(top.few) > 16 {
						top.many = make(map[string]struct{}, 32)
						for _, o := range top.few {
							top.many[o] = struct{}{}
						}
					}
				}
			}
			i = j
		}
	}
	return true
}

func walkValue(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return answerErr(path, "unexpected end of the answer")
		}
		return answerErr(path, "malformed JSON: %v", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxNesting {
		return answerErr(path, "nested deeper than %d", MaxNesting)
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return answerErr(path, "malformed JSON: %v", err)
			}
			k, ok := kt.(string)
			if !ok {
				return answerErr(path, "malformed JSON: key %v is not a string", kt)
			}
			kp := k
			if path != "" {
				kp = path + "." + k
			}
			if seen[k] {
				return answerErr(kp, "duplicate key")
			}
			seen[k] = true
			if err := walkValue(dec, kp, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return answerErr(path, "malformed JSON: %v", err)
	}
	return nil
}

// requirePresent checks that every name in required is a key of obj with a non-null value.
func requirePresent(obj keySet, required []string, prefix string) error {
	for _, k := range required {
		i := 0
		for i < len(obj.keys) && obj.keys[i] != k {
			i++
		}
		if i == len(obj.keys) {
			return answerErr(prefix+k, "required, missing")
		}
		if obj.null[i] {
			return answerErr(prefix+k, "required, null")
		}
	}
	return nil
}

// jsonFields lists the JSON names of a struct type's fields.
func jsonFields(v any) []string {
	rt := reflect.TypeOf(v)
	out := make([]string, 0, rt.NumField())
	for i := 0; i < rt.NumField(); i++ {
		out = append(out, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
	}
	return out
}

var (
	fieldsSchedulableAnswer = jsonFields(SchedulableAnswer{})
	fieldsServerState       = jsonFields(ServerState{})
	fieldsChangeAnswer      = jsonFields(ChangeAnswer{})
	fieldsRegisterAnswer    = jsonFields(RegisterAnswer{})
	fieldsObjectAnswer      = jsonFields(ObjectAnswer{})
)

// spelledExactly refuses a key that matches a field only case-insensitively: encoding/json
// would decode {"fenced":true,"Fenced":false} into Fenced=false (the last match wins), past the
// exact-key duplicate check.
func spelledExactly(obj keySet, fields []string, prefix string) error {
	for _, k := range obj.keys {
		for _, f := range fields {
			if k != f && strings.EqualFold(k, f) { // Unicode simple folding: also ſ~s, K (Kelvin)~k
				return answerErr(prefix+k, "differs from the spec's %q only in case", f)
			}
		}
	}
	return nil
}

// decodeStrict checks b with CheckJSON, then that the top-level object has the required keys,
// then decodes it into into.
func decodeStrict(b []byte, required, fields []string, into any) (*collected, error) {
	c := &collected{}
	if err := checkJSON(b, c); err != nil {
		return nil, err
	}
	if !c.topObject {
		return nil, answerErr("", "not a JSON object")
	}
	if err := spelledExactly(c.top, fields, ""); err != nil {
		return nil, err
	}
	if err := requirePresent(c.top, required, ""); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, answerErr(te.Field, "%s where the spec wants %s", te.Value, te.Type)
		}
		return nil, answerErr("", "%v", err)
	}
	return c, nil
}

// DecodeSchedulableAnswer decodes and validates an answer of GET /v1/schedulable (or /v1/status,
// asked = nil) for the objects asked: seq, instance (non-empty) and servers present; every
// server entry with its required fields, a valid name, listed once; `objects` the asked set
// (absent only when none was asked); `unknown`, `pendingFor` and `caches` only name asked objects.
func DecodeSchedulableAnswer(b []byte, asked []string) (*SchedulableAnswer, error) {
	var a SchedulableAnswer
	top, err := decodeStrict(b, RequiredSchedulableAnswer, fieldsSchedulableAnswer, &a)
	if err != nil {
		return nil, err
	}
	servers := top.servers
	if len(servers) != len(a.Servers) {
		return nil, answerErr("servers", "an entry is not an object")
	}
	if a.Instance == "" {
		return nil, answerErr("instance", "empty")
	}
	askedSet := make(map[string]bool, len(asked))
	for _, o := range asked {
		askedSet[o] = true
	}
	inAsked := func(field string, names []string) error {
		for _, n := range names {
			if !askedSet[n] {
				return answerErr(field, "object %q was not asked for (asked: %s)", n, strings.Join(asked, ","))
			}
		}
		return nil
	}
	// The echo of the asked objects: the same set, each once.
	if len(asked) > 0 {
		if a.Objects == nil {
			return nil, answerErr("objects", "missing, but objects %s were asked", strings.Join(asked, ","))
		}
	}
	seenObj := map[string]bool{}
	for _, o := range a.Objects {
		if seenObj[o] {
			return nil, answerErr("objects", "object %q listed twice", o)
		}
		seenObj[o] = true
	}
	if err := inAsked("objects", a.Objects); err != nil {
		return nil, err
	}
	for _, o := range asked {
		if !seenObj[o] {
			return nil, answerErr("objects", "asked object %q missing from the answer", o)
		}
	}
	if err := inAsked("unknown", a.Unknown); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(a.Servers))
	for i, s := range servers {
		p := fmt.Sprintf("servers[%d].", i)
		if err := spelledExactly(s, fieldsServerState, p); err != nil {
			return nil, err
		}
		if err := requirePresent(s, RequiredServerState, p); err != nil {
			return nil, err
		}
		st := a.Servers[i]
		if !ValidObjectName(st.Name) {
			return nil, answerErr(p+"name", "%q is not a server name (1-253 characters of [A-Za-z0-9._-])", st.Name)
		}
		if seen[st.Name] {
			return nil, answerErr(p+"name", "server %q listed twice", st.Name)
		}
		seen[st.Name] = true
		pf := make([]string, 0, len(st.PendingFor))
		for o := range st.PendingFor {
			pf = append(pf, o)
		}
		sort.Strings(pf)
		if err := inAsked(p+"pendingFor", pf); err != nil {
			return nil, err
		}
		if err := inAsked(p+"caches", st.Caches); err != nil {
			return nil, err
		}
	}
	return &a, nil
}

// DecodeChangeAnswer decodes an answer of a state-changing call (seq and instance required).
func DecodeChangeAnswer(b []byte) (ChangeAnswer, error) {
	var a ChangeAnswer
	if _, err := decodeStrict(b, RequiredChangeAnswer, fieldsChangeAnswer, &a); err != nil {
		return ChangeAnswer{}, err
	}
	return a, nil
}

// DecodeRegisterAnswer decodes an answer of POST /v1/objects for object obj.
func DecodeRegisterAnswer(b []byte, obj string) (RegisterAnswer, error) {
	var a RegisterAnswer
	if _, err := decodeStrict(b, RequiredRegisterAnswer, fieldsRegisterAnswer, &a); err != nil {
		return RegisterAnswer{}, err
	}
	if a.Object != obj {
		return RegisterAnswer{}, answerErr("object", "answer for object %q, asked %q", a.Object, obj)
	}
	return a, nil
}

// DecodeObjectAnswer decodes an answer of GET /v1/objects/{object} for object obj.
func DecodeObjectAnswer(b []byte, obj string) (*ObjectAnswer, error) {
	var a ObjectAnswer
	if _, err := decodeStrict(b, RequiredObjectAnswer, fieldsObjectAnswer, &a); err != nil {
		return nil, err
	}
	if a.Object != obj {
		return nil, answerErr("object", "answer for object %q, asked %q", a.Object, obj)
	}
	return &a, nil
}
