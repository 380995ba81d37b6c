// A Go extender answering names-only filter and prioritize (nodeCacheCapable: true) from an
// in-memory node list, as kubernetes' test extender does (test/integration/scheduler/extender):
// net/http, encoding/json, the request decoded into the official types' shapes (transcribed
// here for the fields the benchmark's bodies carry: this build has no module proxy, so
// k8s.io/api cannot be fetched; resource quantities are parsed as resource.ParseQuantity does).
// Filter: a node the list does not know is UnschedulableAndUnresolvable; a node whose
// allocatable cpu or memory is below the pod's requests fails; so does one without the label a
// pod annotation asks for. Prioritize: the share of the node's allocatable the pod would use
// (NodeResourcesAllocatable's "Most"), 0..10.
package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Quantity decodes as resource.Quantity does: a string parsed at decode time.
type Quantity struct{ milli int64 }

func (q *Quantity) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := parseQuantity(s)
	q.milli = v
	return err
}

// parseQuantity: <number><suffix>, the suffix binary (Ki..Ei), decimal (n, u, m, k, M..E) or an
// exponent (e3, E-2); the value in thousandths, rounded up as resource.Quantity.MilliValue.
func parseQuantity(s string) (int64, error) {
	i := 0
	for i < len(s) && (s[i] == '+' || s[i] == '-' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	num, suffix := s[:i], s[i:]
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("quantities must match the regular expression: %q", s)
	}
	mul := new(big.Rat).SetInt64(1)
	binary := map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
	decimal := map[string]int{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	if b, ok := binary[suffix]; ok {
		mul.SetInt64(b)
	} else if e, ok := decimal[suffix]; ok {
		mul = pow10(e)
	} else if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		var e int
		if _, err := fmt.Sscanf(suffix[1:], "%d", &e); err != nil {
			return 0, fmt.Errorf("unable to parse quantity's suffix: %q", s)
		}
		mul = pow10(e)
	} else {
		return 0, fmt.Errorf("unable to parse quantity's suffix: %q", s)
	}
	r.Mul(r, mul).Mul(r, big.NewRat(1000, 1))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if new(big.Rat).SetInt(q).Cmp(r) < 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64(), nil
}

func pow10(e int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(e))), nil)
	if e < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	GenerateName      string            `json:"generateName,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp time.Time         `json:"creationTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
}

type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

type ResourceRequirements struct {
	Limits   map[string]Quantity `json:"limits,omitempty"`
	Requests map[string]Quantity `json:"requests,omitempty"`
}

type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	HostPort      int32  `json:"hostPort,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

type EnvVar struct {
	Name      string          `json:"name"`
	Value     string          `json:"value,omitempty"`
	ValueFrom json.RawMessage `json:"valueFrom,omitempty"`
}

type VolumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath,omitempty"`
}

type Container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image,omitempty"`
	Command         []string             `json:"command,omitempty"`
	Args            []string             `json:"args,omitempty"`
	Ports           []ContainerPort      `json:"ports,omitempty"`
	EnvFrom         []json.RawMessage    `json:"envFrom,omitempty"`
	Env             []EnvVar             `json:"env,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitempty"`
	VolumeMounts    []VolumeMount        `json:"volumeMounts,omitempty"`
	LivenessProbe   json.RawMessage      `json:"livenessProbe,omitempty"`
	ReadinessProbe  json.RawMessage      `json:"readinessProbe,omitempty"`
	StartupProbe    json.RawMessage      `json:"startupProbe,omitempty"`
	SecurityContext json.RawMessage      `json:"securityContext,omitempty"`
	ImagePullPolicy string               `json:"imagePullPolicy,omitempty"`
}

type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

type PodSpec struct {
	Volumes                   []json.RawMessage `json:"volumes,omitempty"`
	InitContainers            []Container       `json:"initContainers,omitempty"`
	Containers                []Container       `json:"containers"`
	RestartPolicy             string            `json:"restartPolicy,omitempty"`
	NodeSelector              map[string]string `json:"nodeSelector,omitempty"`
	ServiceAccountName        string            `json:"serviceAccountName,omitempty"`
	NodeName                  string            `json:"nodeName,omitempty"`
	Affinity                  json.RawMessage   `json:"affinity,omitempty"`
	SchedulerName             string            `json:"schedulerName,omitempty"`
	Tolerations               []Toleration      `json:"tolerations,omitempty"`
	PriorityClassName         string            `json:"priorityClassName,omitempty"`
	Priority                  *int32            `json:"priority,omitempty"`
	TopologySpreadConstraints []json.RawMessage `json:"topologySpreadConstraints,omitempty"`
	SecurityContext           json.RawMessage   `json:"securityContext,omitempty"`
}

type Pod struct {
	Kind       string          `json:"kind,omitempty"`
	APIVersion string          `json:"apiVersion,omitempty"`
	Metadata   ObjectMeta      `json:"metadata,omitempty"`
	Spec       PodSpec         `json:"spec,omitempty"`
	Status     json.RawMessage `json:"status,omitempty"`
}

// ExtenderArgs, ExtenderFilterResult and HostPriority of k8s.io/kube-scheduler/extender/v1.
type ExtenderArgs struct {
	Pod       *Pod
	Nodes     *json.RawMessage
	NodeNames *[]string
}

type ExtenderFilterResult struct {
	Nodes                      *json.RawMessage
	NodeNames                  *[]string
	FailedNodes                map[string]string
	FailedAndUnresolvableNodes map[string]string
	Error                      string
}

type HostPriority struct {
	Host  string
	Score int64
}

type node struct {
	labels      map[string]string
	cpu, memory int64 // allocatable, thousandths
}

type extender struct {
	mu    sync.RWMutex
	nodes map[string]*node
}

func (e *extender) requests(pod *Pod) (cpu, memory int64) {
	for _, c := range pod.Spec.Containers {
		cpu += c.Resources.Requests["cpu"].milli
		memory += c.Resources.Requests["memory"].milli
	}
	return
}

func (e *extender) filter(args *ExtenderArgs) *ExtenderFilterResult {
	cpu, memory := e.requests(args.Pod)
	wantEdge := args.Pod.Metadata.Annotations["type"] == "space"
	passed := make([]string, 0, len(*args.NodeNames))
	failed, unresolvable := map[string]string{}, map[string]string{}
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, name := range *args.NodeNames {
		n, ok := e.nodes[name]
		switch {
		case !ok:
			unresolvable[name] = "node is not in the extender's cache"
		case wantEdge && n.labels["kubernetes.io/role"] != "edge":
			failed[name] = "node(s) didn't match the annotation's node affinity"
		case n.cpu < cpu || n.memory < memory:
			failed[name] = "Insufficient cpu or memory"
		default:
			passed = append(passed, name)
		}
	}
	return &ExtenderFilterResult{NodeNames: &passed, FailedNodes: failed, FailedAndUnresolvableNodes: unresolvable}
}

func (e *extender) prioritize(args *ExtenderArgs) []HostPriority {
	cpu, memory := e.requests(args.Pod)
	out := make([]HostPriority, 0, len(*args.NodeNames))
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, name := range *args.NodeNames {
		var score int64
		if n, ok := e.nodes[name]; ok && n.cpu > 0 && n.memory > 0 {
			score = (cpu*10/n.cpu + memory*10/n.memory) / 2
		}
		out = append(out, HostPriority{Host: name, Score: score})
	}
	return out
}

func (e *extender) serve(verb func(*ExtenderArgs) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var args ExtenderArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Pod == nil || args.NodeNames == nil {
			http.Error(w, fmt.Sprintf("bad request: %v", err), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(verb(&args))
	}
}

func runExtender(args []string) error {
	fs := flagSet("extender")
	addr := fs.String("listen", "127.0.0.1:0", "address to listen on")
	nodesFile := fs.String("nodes", "", "a JSON array of v1.Node objects")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*nodesFile)
	if err != nil {
		return err
	}
	var raw []struct {
		Metadata ObjectMeta `json:"metadata"`
		Status   struct {
			Allocatable map[string]Quantity `json:"allocatable"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e := &extender{nodes: map[string]*node{}}
	for _, n := range raw {
		e.nodes[n.Metadata.Name] = &node{n.Metadata.Labels, n.Status.Allocatable["cpu"].milli, n.Status.Allocatable["memory"].milli}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", e.serve(func(a *ExtenderArgs) any { return e.filter(a) }))
	mux.HandleFunc("/prioritize", e.serve(func(a *ExtenderArgs) any { return e.prioritize(a) }))
	server := &http.Server{Addr: *addr, Handler: mux}
	ln, err := listen(*addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:"))
	os.Stdout.Sync()
	return server.Serve(ln)
}
