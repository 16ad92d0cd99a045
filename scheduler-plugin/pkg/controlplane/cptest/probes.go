// Package cptest holds control-plane answers for tests: a conforming one and the
// malformed ones (the decoder's tests, its fuzz seeds, and the plugin's fail-closed tests).
package cptest

import "strings"

// GoodAnswer is a conforming answer for objects x,y (two servers).
const GoodAnswer = `{"seq":7,"instance":"i1","objects":["x","y"],"unknown":[],"servers":[` +
	`{"name":"s1","live":true,"fenced":false,"epoch":1,"pending":0,"caches":["x"],"schedulable":true,"schedulableFor":true},` +
	`{"name":"s2","live":true,"fenced":false,"epoch":2,"pending":1,"pendingFor":{"y":1},"pendingObjects":["y"],"schedulable":false,"schedulableFor":false}]}`

// Probe is a malformed answer for objects x,y, and the field its error must name.
type Probe struct {
	Name, Body, Field string
}

// MalformedAnswers are the probes of the plugin's answer decoding; the plugin's tests
// (pkg/apta) serve each of them and check it fails closed.
var MalformedAnswers = []Probe{
	{"trailing garbage", GoodAnswer + `garbage`, "trailing data"},
	{"a second JSON value", GoodAnswer + `{"seq":9}`, "trailing data"},
	{"duplicate key seq (last would win)", strings.Replace(GoodAnswer, `"seq":7`, `"seq":7,"seq":99`, 1), "field seq: duplicate key"},
	{"a key twice as encoding/json decodes it (invalid UTF-8 is U+FFFD)", strings.Replace(GoodAnswer, `"seq":7`, "\"seq\":7,\"\xff\":1,\"\xfe\":2", 1), "duplicate key"},
	{"duplicate key in a server entry", strings.Replace(GoodAnswer, `"fenced":false,"epoch":2`, `"fenced":true,"fenced":false,"epoch":2`, 1), "field servers[1].fenced: duplicate key"},
	{"fenced twice, differing in case (encoding/json: the last wins)", strings.Replace(GoodAnswer, `"name":"s1","live":true,"fenced":false`, `"name":"s1","live":true,"fenced":true,"Fenced":false`, 1), `field servers[0].Fenced: differs from the spec's "fenced" only in case`},
	{"seq twice, differing in case", strings.Replace(GoodAnswer, `"seq":7`, `"seq":7,"SEQ":99`, 1), `field SEQ: differs from the spec's "seq" only in case`},
	{"seq twice, the second with a long s (U+017F)", strings.Replace(GoodAnswer, `"seq":7`, `"seq":7,"\u017feq":99`, 1), `differs from the spec's "seq" only in case`},
	{"server entry missing fenced", strings.Replace(GoodAnswer, `"fenced":false,"epoch":2`, `"epoch":2`, 1), "field servers[1].fenced: required, missing"},
	{"server entry missing pending", strings.Replace(GoodAnswer, `"pending":1,`, ``, 1), "field servers[1].pending: required, missing"},
	{"server entry with fenced null", strings.Replace(GoodAnswer, `"fenced":false,"epoch":2`, `"fenced":null,"epoch":2`, 1), "field servers[1].fenced: required, null"},
	{"server entry missing name", strings.Replace(GoodAnswer, `"name":"s2",`, ``, 1), "field servers[1].name: required, missing"},
	{"server entry missing live", strings.Replace(GoodAnswer, `"name":"s2","live":true,`, `"name":"s2",`, 1), "field servers[1].live: required, missing"},
	{"duplicate server entries", strings.Replace(GoodAnswer, `"name":"s2"`, `"name":"s1"`, 1), `field servers[1].name: server "s1" listed twice`},
	{"missing seq", strings.Replace(GoodAnswer, `"seq":7,`, ``, 1), "field seq: required, missing"},
	{"missing instance", strings.Replace(GoodAnswer, `"instance":"i1",`, ``, 1), "field instance: required, missing"},
	{"empty instance", strings.Replace(GoodAnswer, `"instance":"i1"`, `"instance":""`, 1), "field instance: empty"},
	{"missing servers", `{"seq":7,"instance":"i1","objects":["x","y"]}`, "field servers: required, missing"},
	{"servers null", `{"seq":7,"instance":"i1","objects":["x","y"],"servers":null}`, "field servers: required, null"},
	{"answer for other objects", strings.Replace(GoodAnswer, `"objects":["x","y"]`, `"objects":["x","z"]`, 1), `field objects: object "z" was not asked for`},
	{"an asked object missing", strings.Replace(GoodAnswer, `"objects":["x","y"]`, `"objects":["x"]`, 1), `field objects: asked object "y" missing`},
	{"objects echo missing", strings.Replace(GoodAnswer, `"objects":["x","y"],`, ``, 1), "field objects: missing"},
	{"an object listed twice", strings.Replace(GoodAnswer, `"objects":["x","y"]`, `"objects":["x","y","y"]`, 1), `field objects: object "y" listed twice`},
	{"pendingFor an object not asked", strings.Replace(GoodAnswer, `"pendingFor":{"y":1}`, `"pendingFor":{"q":1}`, 1), `field servers[1].pendingFor: object "q" was not asked for`},
	{"caches an object not asked", strings.Replace(GoodAnswer, `"caches":["x"]`, `"caches":["q"]`, 1), `field servers[0].caches: object "q" was not asked for`},
	{"unknown names an object not asked", strings.Replace(GoodAnswer, `"unknown":[]`, `"unknown":["q"]`, 1), `field unknown: object "q" was not asked for`},
	{"seq of the wrong type", strings.Replace(GoodAnswer, `"seq":7`, `"seq":"7"`, 1), "field seq: string where the spec wants uint64"},
	{"negative seq", strings.Replace(GoodAnswer, `"seq":7`, `"seq":-1`, 1), "field seq: number -1 where the spec wants uint64"},
	{"fenced of the wrong type", strings.Replace(GoodAnswer, `"fenced":false,"epoch":2`, `"fenced":0,"epoch":2`, 1), "field servers.fenced: number where the spec wants bool"},
	{"server name not a name", strings.Replace(GoodAnswer, `"name":"s2"`, `"name":"s 2"`, 1), "field servers[1].name: \"s 2\" is not a server name"},
	{"not an object", `[1,2]`, "not a JSON object"},
	{"truncated", GoodAnswer[:len(GoodAnswer)-3], "malformed JSON"},
	{"empty body", ``, "unexpected end"},
	{"nested too deep", `{"seq":7,"instance":"i1","servers":[],"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "nested deeper than 16"},
}
