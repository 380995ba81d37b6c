// One client timing each verb over keep-alive, as kube-scheduler sees an extender's answer: the
// time from writing the request to decoding the answer with encoding/json (HTTPExtender.send),
// filter then prioritize with filter's survivors, one pod at a time, on one connection. Each
// round's pod is a pod of its own (the body's pod with a UID of the round's), as kube-scheduler
// sends each pod it schedules; prioritize gets the very pod bytes filter got, as it does.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

type verbsResult struct {
	Filter     []float64        `json:"filter"`
	Prioritize []float64        `json:"prioritize"`
	Round      []float64        `json:"round"`
	Passed     int              `json:"passed"`
	Requests   int              `json:"requests"`  // requests answered 200, warm-up included
	Conns      int64            `json:"conns"`     // connections dialled to the extender
	Protocols  map[string]int64 `json:"protocols"` // answers per negotiated protocol
}

func runVerbs(args []string) error {
	fs := flagSet("verbs")
	url := fs.String("url", "", "the extender's urlPrefix")
	body := fs.String("body", "", "a filter body (ExtenderArgs with NodeNames)")
	n := fs.Int("n", 500, "rounds after 20 of warm-up")
	ca := fs.String("ca", "", "the extender's CA (TLS)")
	cert := fs.String("cert", "", "kube-scheduler's client certificate")
	key := fs.String("key", "", "its key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	filterBody, err := os.ReadFile(*body)
	if err != nil {
		return err
	}
	var ea extenderArgs
	if err := json.Unmarshal(filterBody, &ea); err != nil {
		return err
	}
	var pod struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(ea.Pod, &pod); err != nil || len(pod.Metadata.UID) != 36 {
		return fmt.Errorf("the body's pod needs a 36-character metadata.uid: %v", err)
	}
	uid := []byte(`"uid":"` + pod.Metadata.UID + `"`)
	bodies := make([][]byte, *n+20)
	pods := make([]extenderArgs, *n+20)
	for i := range bodies {
		round := []byte(fmt.Sprintf(`"uid":"%08x-0000-4000-8000-%012x"`, i, i))
		bodies[i] = bytes.Replace(filterBody, uid, round, 1)
		if err := json.Unmarshal(bodies[i], &pods[i]); err != nil {
			return err
		}
	}
	transport, err := extenderTransport(*ca, *cert, *key, true)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	prefix := strings.TrimRight(*url, "/")
	var c counters
	var res verbsResult
	for i := 0; i < *n+20; i++ {
		t0 := time.Now()
		var filtered filterResult
		if err := post(client, &c, prefix+"/filter", bodies[i], &filtered); err != nil {
			return fmt.Errorf("request %d: %w", res.Requests+1, err)
		}
		res.Requests++
		t1 := time.Now()
		if filtered.Error != "" || filtered.NodeNames == nil {
			return fmt.Errorf("filter: %q", filtered.Error)
		}
		prio, _ := json.Marshal(extenderArgs{Pod: pods[i].Pod, NodeNames: filtered.NodeNames})
		var scores []hostPriority
		if err := post(client, &c, prefix+"/prioritize", prio, &scores); err != nil {
			return fmt.Errorf("request %d: %w", res.Requests+1, err)
		}
		res.Requests++
		t2 := time.Now()
		if i >= 20 {
			res.Filter = append(res.Filter, t1.Sub(t0).Seconds())
			res.Prioritize = append(res.Prioritize, t2.Sub(t1).Seconds())
			res.Round = append(res.Round, t2.Sub(t0).Seconds())
		}
		res.Passed = len(*filtered.NodeNames)
	}
	res.Conns = c.conns.Load()
	res.Protocols = map[string]int64{}
	c.protos.Range(func(k, v any) bool {
		res.Protocols[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	encoded, _ := json.Marshal(res)
	fmt.Printf("R %s\n", encoded)
	return nil
}
