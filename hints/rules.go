package hints

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shunt-net/shunt/content"
)

// Path preferences of a rule (besides a path's name).
const (
	Fast   = "fast"   // the lowest RTT
	Cheap  = "cheap"  // the lowest cost per byte, then the lowest RTT
	Finish = "finish" // the earliest estimated completion (RTT + queue + size at bandwidth)
)

// Policy is an ordered list of rules: the first whose matchers all hold
// decides; a request no rule matches goes where it would finish first.
//
// A rule file has one rule per line, '#' starts a comment, and an optional
// first line "policy NAME" names it:
//
//	policy urgent-fast
//	urgent -> path=fast
//	class=image size>=100KB -> path=cheap tail=32KB
//	loss>=1% urgency<=1 -> path=fast redundant budget=500KB
//	* -> path=cheap
//
// Matchers: "*" (any request), "urgent" / "bulk" (document, style and
// blocking script, or anything else), "class=C[,C...]", "size<N", "size<=N",
// "size>N", "size>=N" (N in bytes, with KB/MB/KiB/MiB units; a request of
// unknown size matches no size matcher), "urgency<=U", "urgency>=U" (RFC 9218,
// 0..7), "loss>=P%" (the worst path's loss). Actions: "path=fast|cheap|finish|NAME"
// (required), "redundant" (a copy on a second path; the first to complete
// wins), "tail=N" (re-request the last N bytes on the other path when it
// would deliver them sooner), "hedge" (the rest asked for again on the path
// that would deliver it soonest once the response is late against its own
// path's measured RTT and bandwidth; the copy then clearly behind is
// cancelled: ShouldHedge, Behind), "split" (when the caps leave the
// preferred path less room than the object needs, its head, as much as
// they leave, is asked for there by Range and the rest at once on the
// cheapest path the caps allow, instead of the whole on that path),
// "join" (a response in flight, its stream held by flow control, has its
// rest shared with a path that comes up idle later when that ends it
// sooner: the stream stops at a byte, the other path asks for the rest by
// Range; Policy.Join),
// "copies=P%" (this rule's tails and hedges
// only while every copy's bytes, each charged whole, stay within P % of the
// bytes placed so far, or of the load's when the client knows them: a
// page's), "budget=N" (the preferred path takes this rule's
// request only while its bytes in this load stay within N; else the cheapest
// path), "budget=P%" (... only while its share of the bytes placed so far,
// this request's included, stays within P %).
//
// Two optional lines may come before the rules (after the policy line):
//
//	gather 2ms
//	cap fast 25%
//
// "gather DURATION" places requests asked for within DURATION of the first
// together, the most urgent first (First), as a browser's scheduler orders
// what the parser found at once: a capped path's bytes then go to the
// document, style sheets and blocking scripts before the images found
// beside them. "cap fast|cheap|NAME P%" (one per path preference) bounds
// the bytes the path so named carries in the load, its requests, redundant
// copies, tails and hedges together, to P % of the load's bytes when the
// client knows them (a page's), else of the bytes placed so far: a request
// a rule would put there beyond it goes to the rule's next path, else the
// cheapest path the caps allow, and a copy, tail or hedge beyond it is not
// made (CapFits).
type Policy struct {
	Name   string
	Gather time.Duration
	Caps   []Cap
	Rules  []Rule
}

// Cap bounds a path's share of a load's bytes (a "cap" line).
type Cap struct {
	Path string  // fast, cheap or a path's name
	Pct  float64 // percent of the load's bytes
}

// Rule is one line of a policy.
type Rule struct {
	Line    int     // in its file; 0 if built in code
	Classes []Class // nil: any
	Urgent  *bool   // urgent / bulk; nil: either
	MinSize int64   // inclusive; -1 none
	MaxSize int64   // inclusive; -1 none
	MinUrg  int     // -1 none
	MaxUrg  int     // -1 none
	MinLoss float64 // percent (as written, so files round-trip exactly); 0 none

	Path      string
	Redundant bool
	Tail      int64
	Budget    int64   // bytes; 0 none
	BudgetPct float64 // share of the bytes placed so far, percent; 0 none
	Hedge     bool
	CopyPct   float64 // tails' and hedges' bytes, percent of the bytes placed; 0 none
	Split     bool    // over the path's cap: the head it leaves there, the rest elsewhere
	Join      bool    // a path that comes up idle later may take the rest (Policy.Join)
}

func anyRule() Rule { return Rule{MinSize: -1, MaxSize: -1, MinUrg: -1, MaxUrg: -1} }

func (r *Rule) matches(h Hint, paths []PathState) bool {
	if r.Classes != nil && !slices.Contains(r.Classes, h.Class) {
		return false
	}
	if r.Urgent != nil && *r.Urgent != h.Urgent() {
		return false
	}
	if (r.MinSize >= 0 || r.MaxSize >= 0) && h.Size < 0 {
		return false
	}
	if (r.MinSize >= 0 && h.Size < r.MinSize) || (r.MaxSize >= 0 && h.Size > r.MaxSize) {
		return false
	}
	if (r.MinUrg >= 0 || r.MaxUrg >= 0) && h.Urgency < 0 {
		return false
	}
	if (r.MinUrg >= 0 && h.Urgency < r.MinUrg) || (r.MaxUrg >= 0 && h.Urgency > r.MaxUrg) {
		return false
	}
	if r.MinLoss > 0 {
		worst := 0.0
		for _, p := range paths {
			worst = max(worst, p.Loss)
		}
		if worst*100 < r.MinLoss {
			return false
		}
	}
	return true
}

func (p *Policy) match(h Hint, paths []PathState) (*Rule, bool) {
	for i := range p.Rules {
		if p.Rules[i].matches(h, paths) {
			return &p.Rules[i], true
		}
	}
	return nil, false
}

// LineError is a rule file error naming the file and line.
type LineError struct {
	File string
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Msg) }

// Parse reads a rule file; file names it in errors.
func Parse(file, text string) (*Policy, error) {
	p := &Policy{}
	for n, line := range strings.Split(text, "\n") {
		ln := n + 1
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		errf := func(format string, args ...any) error {
			return &LineError{File: file, Line: ln, Msg: fmt.Sprintf(format, args...)}
		}
		if v, ok := strings.CutPrefix(line, "cap "); ok {
			f := strings.Fields(v)
			if len(p.Rules) > 0 {
				return nil, errf("the cap lines must come before the rules")
			}
			if len(f) != 2 || f[0] == Finish || !validName(f[0]) {
				return nil, errf("want cap fast|cheap|NAME P%%, got %q", line)
			}
			pct, err := parsePercent(f[1])
			if err != nil {
				return nil, errf("cap %s: %v", f[0], err)
			}
			if slices.ContainsFunc(p.Caps, func(c Cap) bool { return c.Path == f[0] }) {
				return nil, errf("a second cap on %s", f[0])
			}
			p.Caps = append(p.Caps, Cap{f[0], pct})
			continue
		}
		if v, ok := strings.CutPrefix(line, "gather "); ok {
			g, err := time.ParseDuration(strings.TrimSpace(v))
			switch {
			case p.Gather != 0:
				return nil, errf("a second gather line")
			case len(p.Rules) > 0:
				return nil, errf("the gather line must come before the rules")
			case err != nil || g <= 0 || g > time.Second:
				return nil, errf("gather %q: want a duration above 0 and at most 1s, such as 2ms", strings.TrimSpace(v))
			}
			p.Gather = g
			continue
		}
		if name, ok := strings.CutPrefix(line, "policy "); ok {
			name = strings.TrimSpace(name)
			switch {
			case p.Name != "":
				return nil, errf("a second policy line (the policy is %q)", p.Name)
			case len(p.Rules) > 0 || p.Gather != 0 || p.Caps != nil:
				return nil, errf("the policy line must come first")
			case !validName(name):
				return nil, errf("policy name %q: want letters, digits, '-', '_' or '.'", name)
			}
			p.Name = name
			continue
		}
		lhs, rhs, ok := strings.Cut(line, "->")
		if !ok {
			return nil, errf("want MATCHERS -> ACTIONS (or policy NAME), got %q", line)
		}
		r, err := parseRule(strings.Fields(lhs), strings.Fields(rhs))
		if err != nil {
			return nil, errf("%v", err)
		}
		r.Line = ln
		p.Rules = append(p.Rules, r)
	}
	if len(p.Rules) == 0 {
		return nil, &LineError{File: file, Line: 1, Msg: "no rules"}
	}
	return p, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func parseRule(matchers, actions []string) (Rule, error) {
	r := anyRule()
	if len(matchers) == 0 {
		return r, fmt.Errorf("no matcher before -> (use * for every request)")
	}
	seen := map[string]bool{}
	once := func(key string) error {
		if seen[key] {
			return fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		return nil
	}
	for _, m := range matchers {
		var err error
		switch {
		case m == "*":
			if len(matchers) > 1 {
				return r, fmt.Errorf("* matches everything: no other matcher beside it")
			}
		case m == "urgent" || m == "bulk":
			if err = once("urgent/bulk"); err == nil {
				u := m == "urgent"
				r.Urgent = &u
			}
		case strings.HasPrefix(m, "class="):
			if err = once("class"); err != nil {
				break
			}
			for _, c := range strings.Split(m[len("class="):], ",") {
				if !validClass(c) {
					return r, fmt.Errorf("class %q: want one of %v", c, Classes)
				}
				if slices.Contains(r.Classes, Class(c)) {
					return r, fmt.Errorf("class %s listed twice", c)
				}
				r.Classes = append(r.Classes, Class(c))
			}
		case strings.HasPrefix(m, "size"):
			err = parseBound(m, "size", &r.MinSize, &r.MaxSize, parseBytes, once)
		case strings.HasPrefix(m, "urgency"):
			err = parseBound(m, "urgency", &r.MinUrg, &r.MaxUrg, parseUrgencyValue, once)
		case strings.HasPrefix(m, "loss>="):
			if err = once("loss"); err == nil {
				if r.MinLoss, err = parsePercent(m[len("loss>="):]); err != nil {
					err = fmt.Errorf("matcher %q: %v", m, err)
				}
			}
		default:
			err = fmt.Errorf("unknown matcher %q", m)
		}
		if err != nil {
			return r, err
		}
	}
	for _, a := range actions {
		k, v, hasV := strings.Cut(a, "=")
		if err := once("action " + k); err != nil {
			return r, err
		}
		var err error
		switch {
		case k == "path" && hasV:
			if v == "" || !validName(v) {
				err = fmt.Errorf("path %q: want fast, cheap, finish or a path's name", v)
			}
			r.Path = v
		case k == "redundant" && !hasV:
			r.Redundant = true
		case k == "hedge" && !hasV:
			r.Hedge = true
		case k == "split" && !hasV:
			r.Split = true
		case k == "join" && !hasV:
			r.Join = true
		case k == "copies" && hasV:
			r.CopyPct, err = parsePercent(v)
		case k == "tail" && hasV:
			r.Tail, err = parseBytes(v)
			if err == nil && r.Tail == 0 {
				err = fmt.Errorf("tail=0: leave it out for no tail")
			}
		case k == "budget" && strings.HasSuffix(v, "%"):
			r.BudgetPct, err = parsePercent(v)
		case k == "budget" && hasV:
			r.Budget, err = parseBytes(v)
			if err == nil && r.Budget == 0 {
				err = fmt.Errorf("budget=0: leave it out for no budget")
			}
		default:
			err = fmt.Errorf("unknown action %q (want path=..., redundant, tail=N, hedge, copies=P%%, budget=N, split, join)", a)
		}
		if err != nil {
			return r, err
		}
	}
	switch {
	case r.Path == "":
		return r, fmt.Errorf("no path=... after ->")
	case r.Hedge && r.Tail > 0:
		// Both re-request the rest from where the response stands: one copy.
		return r, fmt.Errorf("hedge and tail=N on one rule: give one of them")
	case r.CopyPct > 0 && !r.Hedge && r.Tail == 0:
		return r, fmt.Errorf("copies=P%% bounds the bytes of a rule's hedges and tails: give hedge or tail=N")
	case r.Split && (r.Redundant || r.Hedge || r.Tail > 0 || r.Budget > 0 || r.BudgetPct > 0):
		// A split's two requests are the object's only copies, and a
		// cap, not a rule's budget, says how much its path may take.
		return r, fmt.Errorf("split goes with none of redundant, tail=N, hedge, budget=")
	case r.Join && (r.Redundant || r.Hedge || r.Tail > 0 || r.Budget > 0 || r.BudgetPct > 0):
		// The held stream and the joining request are the object's only
		// copies, and the joining path's caps say what it may take.
		return r, fmt.Errorf("join goes with none of redundant, tail=N, hedge, budget=")
	}
	return r, nil
}

// parseBound reads KEY<N, KEY<=N, KEY>N or KEY>=N into an inclusive bound.
func parseBound[T int | int64](m, key string, lo, hi *T, parse func(string) (int64, error), once func(string) error) error {
	rest := m[len(key):]
	var op string
	for _, o := range []string{"<=", ">=", "<", ">"} {
		if strings.HasPrefix(rest, o) {
			op = o
			break
		}
	}
	if op == "" {
		return fmt.Errorf("matcher %q: want %s<N, %s<=N, %s>N or %s>=N", m, key, key, key, key)
	}
	n, err := parse(rest[len(op):])
	if err != nil {
		return fmt.Errorf("matcher %q: %v", m, err)
	}
	switch op {
	case "<":
		if n == 0 {
			return fmt.Errorf("matcher %q: nothing is below 0", m)
		}
		op, n = "<=", n-1
	case ">":
		if n == math.MaxInt64 {
			return fmt.Errorf("matcher %q: out of range", m)
		}
		op, n = ">=", n+1
	}
	if op == "<=" {
		if err := once(key + " upper bound"); err != nil {
			return err
		}
		*hi = T(n)
	} else {
		if err := once(key + " lower bound"); err != nil {
			return err
		}
		*lo = T(n)
	}
	if *lo >= 0 && *hi >= 0 && *lo > *hi {
		return fmt.Errorf("%s bounds %d..%d match nothing", key, *lo, *hi)
	}
	return nil
}

func parseBytes(s string) (int64, error) {
	n, err := content.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("size %q: negative", s)
	}
	return n, nil
}

func parseUrgencyValue(s string) (int64, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 7 {
		return 0, fmt.Errorf("urgency %q: want 0..7", s)
	}
	return int64(n), nil
}

// parsePercent reads P% (0 < P <= 100).
func parsePercent(s string) (float64, error) {
	v, ok := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil || !(f > 0 && f <= 100) {
		return 0, fmt.Errorf("%q: want a percentage above 0 and at most 100, such as 1%%", s)
	}
	return f, nil
}

// String writes p as a rule file that Parse reads back to the same policy
// (line numbers aside).
func (p *Policy) String() string {
	var b strings.Builder
	if p.Name != "" {
		b.WriteString("policy " + p.Name + "\n")
	}
	if p.Gather > 0 {
		b.WriteString("gather " + p.Gather.String() + "\n")
	}
	for _, c := range p.Caps {
		b.WriteString("cap " + c.Path + " " + strconv.FormatFloat(c.Pct, 'g', -1, 64) + "%\n")
	}
	for _, r := range p.Rules {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

// String writes one rule line.
func (r Rule) String() string {
	var m []string
	if r.Urgent != nil {
		m = append(m, map[bool]string{true: "urgent", false: "bulk"}[*r.Urgent])
	}
	if r.Classes != nil {
		cs := make([]string, len(r.Classes))
		for i, c := range r.Classes {
			cs[i] = string(c)
		}
		m = append(m, "class="+strings.Join(cs, ","))
	}
	if r.MinSize >= 0 {
		m = append(m, "size>="+strconv.FormatInt(r.MinSize, 10))
	}
	if r.MaxSize >= 0 {
		m = append(m, "size<="+strconv.FormatInt(r.MaxSize, 10))
	}
	if r.MinUrg >= 0 {
		m = append(m, "urgency>="+strconv.Itoa(r.MinUrg))
	}
	if r.MaxUrg >= 0 {
		m = append(m, "urgency<="+strconv.Itoa(r.MaxUrg))
	}
	if r.MinLoss > 0 {
		m = append(m, "loss>="+strconv.FormatFloat(r.MinLoss, 'g', -1, 64)+"%")
	}
	if len(m) == 0 {
		m = []string{"*"}
	}
	a := []string{"path=" + r.Path}
	if r.Redundant {
		a = append(a, "redundant")
	}
	if r.Tail > 0 {
		a = append(a, "tail="+strconv.FormatInt(r.Tail, 10))
	}
	if r.Hedge {
		a = append(a, "hedge")
	}
	if r.CopyPct > 0 {
		a = append(a, "copies="+strconv.FormatFloat(r.CopyPct, 'g', -1, 64)+"%")
	}
	if r.Split {
		a = append(a, "split")
	}
	if r.Join {
		a = append(a, "join")
	}
	if r.Budget > 0 {
		a = append(a, "budget="+strconv.FormatInt(r.Budget, 10))
	}
	if r.BudgetPct > 0 {
		a = append(a, "budget="+strconv.FormatFloat(r.BudgetPct, 'g', -1, 64)+"%")
	}
	return strings.Join(m, " ") + " -> " + strings.Join(a, " ")
}
