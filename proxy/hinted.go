package proxy

import (
	"net/http"
	"sync"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
)

// hintedTransport fetches plain GETs through an mph2.Hinted per origin: one
// HTTP/2 connection per path to it, each request placed by the policy from
// the hint its headers give (hints.FromHeaders: Sec-Fetch-Dest, Priority,
// Accept). Anything else (a body, another method) goes through next.
type hintedTransport struct {
	newClient func() *mph2.Client
	policy    *hints.Policy
	cost      []float64
	placed    func(target string, hint hints.Hint, path int)
	next      http.RoundTripper

	mu      sync.Mutex
	origins map[string]*mph2.Hinted // by scheme://host
}

func (t *hintedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) {
		return t.next.RoundTrip(req)
	}
	h, err := t.origin(req.URL.Scheme, req.URL.Host)
	if err != nil {
		return nil, err
	}
	return h.RoundTrip(req)
}

// preconnect starts the origin's Hinted, whose paths dial in the
// background, before its first request; an error comes back with that
// request.
func (t *hintedTransport) preconnect(scheme, host string) { t.origin(scheme, host) }

// origin is the Hinted of one origin (host with or without its default
// port: one Hinted), started on first use.
func (t *hintedTransport) origin(scheme, host string) (*mph2.Hinted, error) {
	base := scheme + "://" + h2.HostPort(host, scheme)
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.origins[base]; ok {
		return h, nil
	}
	c := t.newClient()
	c.EndAdjust = mph2.HintedEndAdjust(t.policy)
	h := &mph2.Hinted{Client: c, Policy: t.policy, Cost: t.cost}
	if t.placed != nil {
		h.Placed = func(req *http.Request, hint hints.Hint, g *mph2.Got) { t.placed(req.URL.String(), hint, g.Path) }
	}
	if err := h.Start(base); err != nil {
		return nil, err
	}
	if t.origins == nil {
		t.origins = map[string]*mph2.Hinted{}
	}
	t.origins[base] = h
	return h, nil
}

// closeAll closes every origin's connections; the next request opens
// fresh ones.
func (t *hintedTransport) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, h := range t.origins {
		h.Close()
		delete(t.origins, k)
	}
}
