package site

import (
	"fmt"
	"os"
	"strings"

	"github.com/shunt-net/shunt/internal/shared"
	"github.com/shunt-net/shunt/page"
)

// PageFile resolves a page argument: a file if one exists at arg, else a
// Table IV page by the paper's name ("google", any case) or graph name
// ("www.google.com.hk_"), in the shared pages directory.
func PageFile(arg string) (string, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return arg, nil
	}
	for _, t := range page.TableIV {
		if strings.EqualFold(t.Name, arg) || t.Graph == arg {
			return shared.Path("pages", t.Graph+".json")
		}
	}
	names := make([]string, len(page.TableIV))
	for i, t := range page.TableIV {
		names[i] = strings.ToLower(t.Name)
	}
	return "", fmt.Errorf("page %q: no such file, and not a Table IV page (%s)", arg, strings.Join(names, ", "))
}
