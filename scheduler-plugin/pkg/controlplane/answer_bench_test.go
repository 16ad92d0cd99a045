//go:build unix

package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkDecodeAnswer: the strict decoder's parts against encoding/json, on answers of GET
// /v1/schedulable for 100, 1,000 and 5,000 compute servers built by the conforming Server. Per size:
//
//	fastCheck        the key scan alone
//	valid+fastCheck  CheckJSON on a good answer (json.Valid, then the scan): what the scan costs
//	tokenWalk        the same check by encoding/json's Decoder.Token (slowCheck; it does not even
//	                 record the keys the scan records): what the check would cost without the scan
//	json.Unmarshal   the typed decode every answer gets after the check
//	strict           DecodeSchedulableAnswer, all of it
//
// Besides ns/op (wall), cpu-ns/op is the process's CPU time (user + system, GC included) per
// answer: on a loaded machine it is the figure that compares with the scheduler's own CPU per pod.
func BenchmarkDecodeAnswer(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		body, ask := benchAnswer(b, n)
		run := func(name string, f func() error) {
			b.Run(fmt.Sprintf("nodes=%d/%s", n, name), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if err := f(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
		run("fastCheck", func() error {
			if !fastCheck(body, &collected{}) {
				return errors.New("fastCheck refused a conforming answer")
			}
			return nil
		})
		run("valid+fastCheck", func() error { return checkJSON(body, &collected{}) })
		run("tokenWalk", func() error { return slowCheck(body) })
		run("json.Unmarshal", func() error { var a SchedulableAnswer; return json.Unmarshal(body, &a) })
		run("strict", func() error { _, err := DecodeSchedulableAnswer(body, ask); return err })
	}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchAnswer is the answer for n servers asked about two objects, in the shape of a busy cluster:
// n/2 objects, each put by one server and got by the next two, every fifth put again (its two
// readers owe an ack), one server in a hundred fenced.
func benchAnswer(tb testing.TB, n int) ([]byte, []string) {
	cp := NewServer(nil)
	name := func(i int) string { return fmt.Sprintf("cs-%05d", i%n) }
	for i := 0; i < n; i++ {
		if _, err := cp.AddServer(name(i)); err != nil {
			tb.Fatal(err)
		}
	}
	for i := 0; i < n/2; i++ {
		obj := fmt.Sprintf("%d", 1000+i)
		for _, step := range []func() (ChangeAnswer, error){
			func() (ChangeAnswer, error) { return cp.Commit(name(i), obj) },
			func() (ChangeAnswer, error) { return cp.Cache(name(i+1), obj) },
			func() (ChangeAnswer, error) { return cp.Cache(name(i+2), obj) },
		} {
			if _, err := step(); err != nil {
				tb.Fatal(err)
			}
		}
		if i%5 == 0 {
			if _, err := cp.Commit(name(i), obj); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for i := 50; i < n; i += 100 {
		if _, err := cp.Fence(name(i)); err != nil {
			tb.Fatal(err)
		}
	}
	ask := []string{"1000", "1001"}
	body, err := json.Marshal(cp.Schedulable(ask))
	if err != nil {
		tb.Fatal(err)
	}
	return body, ask
}
