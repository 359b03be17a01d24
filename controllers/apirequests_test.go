package controllers

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// apiRequests counts the requests the suite's managers send to the API
// server, by namespace and by verb and resource; reconciles counts the
// reconciles of each cluster, as the clusters the manager reads.
var (
	apiRequests = &requestCounter{counts: map[string]map[string]int{}}
	reconciles  = &requestCounter{counts: map[string]map[string]int{}}
)

type requestCounter struct {
	mu     sync.Mutex
	counts map[string]map[string]int
}

func (rc *requestCounter) add(namespace, what string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.counts[namespace] == nil {
		rc.counts[namespace] = map[string]int{}
	}
	rc.counts[namespace][what]++
}

// in is a copy of the counts of one namespace.
func (rc *requestCounter) in(namespace string) map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]int{}
	for k, v := range rc.counts[namespace] {
		out[k] = v
	}
	return out
}

// wrap is a rest.Config transport wrapper that counts each request.
func (rc *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		ns, what := describeRequest(req)
		rc.add(ns, what)
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// describeRequest names a request's namespace ("" for cluster-scoped
// objects) and what it does: its verb (get for one object, list, watch,
// create, patch, update, delete) and resource, with the subresource.
func describeRequest(req *http.Request) (namespace, what string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", req.Method + " " + req.URL.Path
	}
	var resource, name, sub string
	switch {
	case len(parts) >= 3 && parts[0] == "namespaces":
		namespace, resource = parts[1], parts[2]
		if len(parts) >= 4 {
			name = parts[3]
		}
		if len(parts) >= 5 {
			sub = "/" + parts[4]
		}
	case len(parts) >= 1:
		resource = parts[0]
		if len(parts) >= 2 {
			name = parts[1]
		}
		if resource == "namespaces" {
			namespace = name
		}
	}
	verb := map[string]string{
		http.MethodPost: "create", http.MethodPatch: "patch", http.MethodPut: "update", http.MethodDelete: "delete",
	}[req.Method]
	if req.Method == http.MethodGet {
		switch {
		case req.URL.Query().Get("watch") == "true":
			verb = "watch"
		case name == "":
			verb = "list"
		default:
			verb = "get"
		}
	}
	return namespace, verb + " " + resource + sub
}

// countingClient counts the reads of clusters: each reconcile starts with
// one.
type countingClient struct{ client.Client }

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v1alpha1.NameServerCluster); ok {
		reconciles.add(key.Namespace, key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
