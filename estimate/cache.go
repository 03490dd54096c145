package estimate

import (
	"sync"
	"time"
)

// Path is what is known about one path's condition.
type Path struct {
	Bandwidth float64       // bytes per second; 0 means unknown
	RTT       time.Duration // application-layer RTT; 0 means unknown
}

// Known reports whether both the bandwidth and the RTT are known.
func (p Path) Known() bool { return p.Bandwidth > 0 && p.RTT > 0 }

// Cache keeps path estimates across transfers, like TCP's metrics cache, so
// a transfer can split its first requests by Equation 1 instead of evenly
// (MP-H2+FS+BW/L). Keys are chosen by the caller, e.g. interface plus server
// address. Safe for concurrent use, since transfers may run in parallel.
type Cache struct {
	maxAge time.Duration
	mu     sync.Mutex
	m      map[string]cacheEntry
}

type cacheEntry struct {
	p  Path
	at time.Time
}

// NewCache returns a cache whose entries expire maxAge after they were put
// (0: never).
func NewCache(maxAge time.Duration) *Cache {
	return &Cache{maxAge: maxAge, m: make(map[string]cacheEntry)}
}

// Put stores p for key at now, keeping a previously known field when p's is
// unknown.
func (c *Cache) Put(key string, now time.Time, p Path) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok && !c.expired(old, now) {
		if p.Bandwidth <= 0 {
			p.Bandwidth = old.p.Bandwidth
		}
		if p.RTT <= 0 {
			p.RTT = old.p.RTT
		}
	}
	if p.Bandwidth <= 0 && p.RTT <= 0 {
		return
	}
	c.m[key] = cacheEntry{p: p, at: now}
}

// Get returns the estimate stored for key, and false if there is none or it
// has expired at now.
func (c *Cache) Get(key string, now time.Time) (Path, bool) {
	p, _, ok := c.GetAt(key, now)
	return p, ok
}

// GetAt is Get with the time the estimate was stored.
func (c *Cache) GetAt(key string, now time.Time) (Path, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || c.expired(e, now) {
		return Path{}, time.Time{}, false
	}
	return e.p, e.at, true
}

func (c *Cache) expired(e cacheEntry, now time.Time) bool {
	return c.maxAge > 0 && now.Sub(e.at) > c.maxAge
}
