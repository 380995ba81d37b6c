// The scheduling cycle as kube-scheduler v1.30 drives an extender (pkg/scheduler/schedule_one.go):
// one pod at a time, filter then prioritize, each awaited (findNodesThatPassExtenders,
// prioritizeNodes), the host chosen (selectHost: the highest score, ties broken at random), and
// the binding cycle started in a goroutine of its own without waiting for it and without a limit
// (ScheduleOne's `go func() { ... bind ... }()`): binds arrive while the next pods' filter and
// prioritize are sent, on the same http.Client.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptrace"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// podArgs is one line of the -pods file: the pod's identity and its filter body (ExtenderArgs).
type podArgs struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	UID       string          `json:"uid"`
	Args      json.RawMessage `json:"args"`
}

type extenderArgs struct {
	Pod       json.RawMessage `json:"Pod"`
	Nodes     *struct{}       `json:"Nodes"`
	NodeNames *[]string       `json:"NodeNames"`
}

type filterResult struct {
	NodeNames *[]string `json:"NodeNames"`
	Error     string    `json:"Error"`
}

type hostPriority struct {
	Host  string `json:"Host"`
	Score int64  `json:"Score"`
}

type bindingArgs struct {
	PodName      string
	PodNamespace string
	PodUID       string
	Node         string
}

type bindingResult struct {
	Error string `json:"Error"`
}

// counters of what the transport did, from httptrace
type counters struct {
	conns      atomic.Int64 // connections dialled
	handshakes atomic.Int64 // TLS handshakes completed
	protos     sync.Map     // negotiated protocol -> *atomic.Int64
}

func (c *counters) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectDone: func(network, addr string, err error) {
			if err == nil {
				c.conns.Add(1)
			}
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				c.handshakes.Add(1)
			}
		},
	})
}

func (c *counters) proto(p string) {
	v, _ := c.protos.LoadOrStore(p, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// post is HTTPExtender.send: JSON body, Content-Type, a non-200 is an error, the answer decoded.
func post(client *http.Client, c *counters, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(c.trace(context.Background()), "POST", url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.proto(resp.Proto)
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("failed %s with extender, code %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

type cycleResult struct {
	Pods       int              `json:"pods"`
	Bound      int              `json:"bound"`
	Failed     int              `json:"failed"`
	FirstError string           `json:"first_error"`
	Wall       float64          `json:"wall"`       // seconds: first filter to last bind answered
	Cycle      []float64        `json:"cycle"`      // seconds per pod: filter + prioritize + selectHost
	Filter     []float64        `json:"filter"`     // seconds per call
	Prioritize []float64        `json:"prioritize"` // seconds per call
	Bind       []float64        `json:"bind"`       // seconds per bind (extender or API)
	Conns      int64            `json:"conns"`      // connections dialled to the extender
	Handshakes int64            `json:"handshakes"` // TLS handshakes with the extender
	Protocols  map[string]int64 `json:"protocols"`  // answers per negotiated protocol
}

func runCycle(args []string) error {
	fs := flagSet("cycle")
	url := fs.String("url", "", "the extender's urlPrefix")
	ca := fs.String("ca", "", "the extender's CA (TLS)")
	cert := fs.String("cert", "", "kube-scheduler's client certificate")
	key := fs.String("key", "", "its key")
	pods := fs.String("pods", "", "JSON lines: namespace, name, uid, args (the filter body)")
	bind := fs.String("bind", "extender", "extender (bindVerb), api (DefaultBinder through net/http), stdout (a line per pod for another binder), none")
	api := fs.String("api", "", "the API server's URL (-bind api)")
	token := fs.String("token", "", "bearer token for the API server (-bind api)")
	timeout := fs.Duration("timeout", 5*time.Second, "the extender's httpTimeout")
	h2 := fs.Bool("http2", true, "offer h2 by ALPN (SetTransportDefaults does unless DISABLE_HTTP2)")
	seed := fs.Int64("seed", 1, "selectHost's tie-break seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	work, err := readPods(*pods)
	if err != nil {
		return err
	}
	transport, err := extenderTransport(*ca, *cert, *key, *h2)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport, Timeout: *timeout}
	apiClient := &http.Client{Transport: apiTransport(), Timeout: 30 * time.Second}
	prefix := strings.TrimRight(*url, "/")
	rng := rand.New(rand.NewSource(*seed))
	var c counters
	res := cycleResult{Pods: len(work)}
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	var mu sync.Mutex
	var wg sync.WaitGroup
	fail := func(err error) {
		mu.Lock()
		res.Failed++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
		mu.Unlock()
	}
	if *bind == "stdout" {
		fmt.Fprintln(out, "S")
		out.Flush()
	}
	started := time.Now()
	for _, p := range work {
		t0 := time.Now()
		var filtered filterResult
		if err := post(client, &c, prefix+"/filter", p.Args, &filtered); err != nil {
			fail(err)
			continue
		}
		t1 := time.Now()
		if filtered.Error != "" || filtered.NodeNames == nil || len(*filtered.NodeNames) == 0 {
			fail(fmt.Errorf("filter %s/%s: %q", p.Namespace, p.Name, filtered.Error))
			continue
		}
		var ea extenderArgs
		if err := json.Unmarshal(p.Args, &ea); err != nil {
			return err
		}
		prio, _ := json.Marshal(extenderArgs{Pod: ea.Pod, NodeNames: filtered.NodeNames})
		var scores []hostPriority
		if err := post(client, &c, prefix+"/prioritize", prio, &scores); err != nil {
			fail(err)
			continue
		}
		t2 := time.Now()
		host := selectHost(scores, rng)
		res.Filter = append(res.Filter, t1.Sub(t0).Seconds())
		res.Prioritize = append(res.Prioritize, t2.Sub(t1).Seconds())
		res.Cycle = append(res.Cycle, time.Since(t0).Seconds())
		if host == "" {
			fail(fmt.Errorf("prioritize %s/%s: no host", p.Namespace, p.Name))
			continue
		}
		switch *bind {
		case "none":
			continue
		case "stdout":
			outMu.Lock()
			fmt.Fprintf(out, "B %s %s %s %s\n", p.Namespace, p.Name, p.UID, host)
			out.Flush()
			outMu.Unlock()
			continue
		}
		wg.Add(1)
		go func(p podArgs, host string) { // the binding cycle: not awaited, not limited
			defer wg.Done()
			b0 := time.Now()
			var err error
			if *bind == "api" {
				err = apiBind(apiClient, *api, *token, p, host)
			} else {
				body, _ := json.Marshal(bindingArgs{p.Name, p.Namespace, p.UID, host})
				var result bindingResult
				err = post(client, &c, prefix+"/bind", body, &result)
				if err == nil && result.Error != "" {
					err = fmt.Errorf("bind %s/%s: %s", p.Namespace, p.Name, result.Error)
				}
			}
			elapsed := time.Since(b0).Seconds()
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			res.Bound++
			res.Bind = append(res.Bind, elapsed)
			mu.Unlock()
		}(p, host)
	}
	wg.Wait()
	res.Wall = time.Since(started).Seconds()
	res.Conns, res.Handshakes = c.conns.Load(), c.handshakes.Load()
	res.Protocols = map[string]int64{}
	c.protos.Range(func(k, v any) bool {
		res.Protocols[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	encoded, _ := json.Marshal(res)
	outMu.Lock()
	fmt.Fprintf(out, "R %s\n", encoded)
	out.Flush()
	outMu.Unlock()
	return nil
}

// selectHost is schedule_one.go's: the highest score, one of the tied hosts at random.
func selectHost(scores []hostPriority, rng *rand.Rand) string {
	best, seen := "", 0
	var top int64
	for _, s := range scores {
		switch {
		case best == "" || s.Score > top:
			best, top, seen = s.Host, s.Score, 1
		case s.Score == top:
			seen++
			if rng.Intn(seen) == 0 {
				best = s.Host
			}
		}
	}
	return best
}

// apiBind is DefaultBinder's Bind: POST pods/binding with the pod's UID as precondition.
func apiBind(client *http.Client, api, token string, p podArgs, host string) error {
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Binding",
		"metadata":   map[string]any{"namespace": p.Namespace, "name": p.Name, "uid": p.UID},
		"target":     map[string]any{"kind": "Node", "name": host},
	})
	url := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/binding", strings.TrimRight(api, "/"), p.Namespace, p.Name)
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("binding %s/%s: %d %s", p.Namespace, p.Name, resp.StatusCode, data)
	}
	return nil
}

func readPods(path string) ([]podArgs, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []podArgs
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var p podArgs
		if err := json.Unmarshal(scanner.Bytes(), &p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, scanner.Err()
}

func quantiles(values []float64, qs ...float64) []float64 {
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	out := make([]float64, len(qs))
	for i, q := range qs {
		if len(sorted) > 0 {
			out[i] = sorted[int(q*float64(len(sorted)-1)+0.5)]
		}
	}
	return out
}
