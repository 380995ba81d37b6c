// One client timing each verb over keep-alive, as kube-scheduler sees an extender's answer: the
// time from writing the request to decoding the answer with encoding/json (HTTPExtender.send),
// filter then prioritize with filter's survivors, one pod at a time, on one connection.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

type verbsResult struct {
	Filter     []float64 `json:"filter"`
	Prioritize []float64 `json:"prioritize"`
	Round      []float64 `json:"round"`
	Passed     int       `json:"passed"`
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
		if err := post(client, &c, prefix+"/filter", filterBody, &filtered); err != nil {
			return err
		}
		t1 := time.Now()
		if filtered.Error != "" || filtered.NodeNames == nil {
			return fmt.Errorf("filter: %q", filtered.Error)
		}
		prio, _ := json.Marshal(extenderArgs{Pod: ea.Pod, NodeNames: filtered.NodeNames})
		var scores []hostPriority
		if err := post(client, &c, prefix+"/prioritize", prio, &scores); err != nil {
			return err
		}
		t2 := time.Now()
		if i >= 20 {
			res.Filter = append(res.Filter, t1.Sub(t0).Seconds())
			res.Prioritize = append(res.Prioritize, t2.Sub(t1).Seconds())
			res.Round = append(res.Round, t2.Sub(t0).Seconds())
		}
		res.Passed = len(*filtered.NodeNames)
	}
	encoded, _ := json.Marshal(res)
	fmt.Printf("R %s\n", encoded)
	return nil
}
