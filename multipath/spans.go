package multipath

import "sort"

// span is the byte interval [a, b).
type span struct{ a, b int64 }

// spanSet is a set of bytes kept as sorted, disjoint, non-adjacent spans.
type spanSet []span

// add inserts [a, b), merging with touching spans.
func (s *spanSet) add(a, b int64) {
	if a >= b {
		return
	}
	v := *s
	// First span that ends at or after a, i.e. may touch [a, b).
	i := sort.Search(len(v), func(k int) bool { return v[k].b >= a })
	j := i
	for j < len(v) && v[j].a <= b {
		a = min(a, v[j].a)
		b = max(b, v[j].b)
		j++
	}
	if i == j {
		v = append(v, span{})
		copy(v[i+1:], v[i:])
		v[i] = span{a, b}
	} else {
		v[i] = span{a, b}
		v = append(v[:i+1], v[j:]...)
	}
	*s = v
}

// remove deletes [a, b) from the set.
func (s *spanSet) remove(a, b int64) {
	if a >= b {
		return
	}
	var out spanSet
	for _, x := range *s {
		if x.b <= a || x.a >= b {
			out = append(out, x)
			continue
		}
		if x.a < a {
			out = append(out, span{x.a, a})
		}
		if x.b > b {
			out = append(out, span{b, x.b})
		}
	}
	*s = out
}

// gaps calls f for each maximal part of [a, b) that is not in the set.
func (s spanSet) gaps(a, b int64, f func(a, b int64)) {
	i := sort.Search(len(s), func(k int) bool { return s[k].b > a })
	for ; a < b && i < len(s) && s[i].a < b; i++ {
		if s[i].a > a {
			f(a, s[i].a)
		}
		a = max(a, s[i].b)
	}
	if a < b {
		f(a, b)
	}
}

// covers reports whether every byte of [a, b) is in the set.
func (s spanSet) covers(a, b int64) bool {
	i := sort.Search(len(s), func(k int) bool { return s[k].b > a })
	return a >= b || (i < len(s) && s[i].a <= a && s[i].b >= b)
}

// total returns the number of bytes in the set.
func (s spanSet) total() int64 {
	var n int64
	for _, x := range s {
		n += x.b - x.a
	}
	return n
}
