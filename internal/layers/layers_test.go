package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// floors puts every top-level folder of the module on a floor: a package may
// import packages on its own floor or below, never above. A new folder must be
// added here, on purpose.
var floors = map[string]int{
	// wire engine, link-emulation logic, page model, served content, estimators
	"h2": 1, "netem": 1, "page": 1, "content": 1, "estimate": 1,
	// protocol extensions and pure schedulers on the engine; ground helpers
	"smig": 2, "multipath": 2, "hints": 2, "internal": 2,
	// things that run: the server, namespaces and links, the multipath client, peer launchers
	"server": 3, "testbed": 3, "mph2": 3, "peers": 3, "dash": 3, "proxy": 3, "conform": 3,
	// experiments
	"replay": 4, "experiment": 4,
	// scenarios, runner, sharding, merge
	"bench": 5,
	// tables, plots, HTML from records
	"report": 6,
	// the CLI and other programs
	"cmd": 7,
	// integration tests against real peers
	"interop": 8,
}

type pkg struct {
	path, folder string
	imports      []string
}

// modulePackages lists the module's packages with their non-test imports
// inside the module.
func modulePackages(t *testing.T) (module string, pkgs []pkg) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module = strings.TrimSpace(string(out))
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		p := pkg{path: f[0], folder: folderOf(module, f[0])}
		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				p.imports = append(p.imports, imp)
			}
		}
		pkgs = append(pkgs, p)
	}
	return module, pkgs
}

func folderOf(module, path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	first, _, _ := strings.Cut(rel, "/")
	return first
}

// TestFloors fails on a folder without a floor and on an import up a floor.
func TestFloors(t *testing.T) {
	module, pkgs := modulePackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages: the test is not looking at the module", len(pkgs))
	}
	for _, p := range pkgs {
		fl, ok := floors[p.folder]
		if !ok {
			t.Errorf("folder %s (package %s) has no floor: add it to floors in this test, on the floor it belongs to (README, Layout)", p.folder, p.path)
			continue
		}
		for _, imp := range p.imports {
			g := folderOf(module, imp)
			if gf, ok := floors[g]; ok && gf > fl {
				t.Errorf("%s (floor %d, %s) imports %s (floor %d, %s): an import up the layers", p.path, fl, p.folder, imp, gf, g)
			}
		}
	}
}

// TestFoldersAcyclic fails when two top-level folders import each other,
// directly or through others, naming the cycle.
func TestFoldersAcyclic(t *testing.T) {
	module, pkgs := modulePackages(t)
	edges := map[string]map[string]bool{}
	for _, p := range pkgs {
		for _, imp := range p.imports {
			if g := folderOf(module, imp); g != p.folder {
				if edges[p.folder] == nil {
					edges[p.folder] = map[string]bool{}
				}
				edges[p.folder][g] = true
			}
		}
	}
	if c := findCycle(edges); c != nil {
		t.Errorf("folders import each other: %s", strings.Join(c, " -> "))
	}
}

// findCycle returns one cycle of the graph (first node repeated at the end),
// or nil. Nodes are visited in sorted order so the answer is stable.
func findCycle(edges map[string]map[string]bool) []string {
	const (
		unseen = iota
		onStack
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = onStack
		stack = append(stack, n)
		for _, m := range sorted(edges[n]) {
			switch state[m] {
			case onStack:
				for i, s := range stack {
					if s == m {
						return append(append([]string{}, stack[i:]...), m)
					}
				}
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	for _, n := range sorted(nodes(edges)) {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

func nodes(edges map[string]map[string]bool) map[string]bool {
	all := map[string]bool{}
	for a, bs := range edges {
		all[a] = true
		for b := range bs {
			all[b] = true
		}
	}
	return all
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestFindCycle checks the detector itself, so a passing TestFoldersAcyclic
// means something.
func TestFindCycle(t *testing.T) {
	for _, tc := range []struct {
		edges map[string]map[string]bool
		want  string
	}{
		{map[string]map[string]bool{"a": {"b": true}, "b": {"c": true}}, ""},
		{map[string]map[string]bool{"a": {"b": true}, "b": {"a": true}}, "a -> b -> a"},
		{map[string]map[string]bool{"cli": {"bench": true, "sockctl": true}, "server": {"internal": true}, "internal": {"peers": true}, "peers": {"server": true}}, "internal -> peers -> server -> internal"},
	} {
		got := strings.Join(findCycle(tc.edges), " -> ")
		if got != tc.want {
			t.Errorf("findCycle(%v) = %q, want %q", tc.edges, got, tc.want)
		}
	}
}
