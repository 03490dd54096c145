package cli

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2/hpack"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/site"
	"github.com/shunt-net/shunt/server"
)

// pageFlags are serve's replay options: pages served under site.Prefix, and
// HTTP/3 beside TCP.
type pageFlags struct {
	files []string
	dir   *string
	h3    *bool
	// site serves each page as the real site replay/browser generates, for
	// a browser; siteCompute makes its computations busy loops.
	site, siteCompute *bool
}

func addPageFlags(fs *flag.FlagSet) *pageFlags {
	pf := &pageFlags{}
	fs.Func("page", "serve the objects of the page graph or HAR `FILE` at "+site.Prefix+"NAME/PATH (repeatable)", func(s string) error {
		pf.files = append(pf.files, s)
		return nil
	})
	pf.dir = fs.String("pages", "", "serve every page graph (*.json) and HAR file (*.har) in `DIR`")
	pf.site = fs.Bool("site", false, "serve each page as a real site for a browser (replay/browser): HTML, scripts, style sheets and images at the graph's paths and sizes, root at "+site.Prefix+"NAME/ROOTPATH")
	pf.siteCompute = fs.Bool("site-compute", false, "with --site: the graph's computations as busy loops in the HTML and scripts")
	pf.h3 = fs.Bool("h3", false, "also serve HTTP/3 on the UDP port of the same number, advertised by Alt-Svc (needs --tls)")
	return pf
}

// loadPages reads the pages the flags name.
func (pf *pageFlags) loadPages() ([]*page.Page, error) {
	files := append([]string(nil), pf.files...)
	if *pf.dir != "" {
		ents, err := os.ReadDir(*pf.dir)
		if err != nil {
			return nil, fmt.Errorf("--pages: %w", err)
		}
		var found []string
		for _, e := range ents {
			if ext := strings.ToLower(filepath.Ext(e.Name())); !e.IsDir() && (ext == ".json" || ext == ".har") {
				found = append(found, filepath.Join(*pf.dir, e.Name()))
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("--pages %s: no .json or .har files", *pf.dir)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	var pages []*page.Page
	for _, f := range files {
		p, err := page.Load(f)
		if err != nil {
			return nil, err
		}
		pages = append(pages, p)
	}
	return pages, nil
}

// handler mounts the pages, if any, in front of h.
func (pf *pageFlags) handler(h http.Handler, stderr io.Writer) (http.Handler, error) {
	pages, err := pf.loadPages()
	if err != nil || len(pages) == 0 {
		return h, err
	}
	if *pf.siteCompute && !*pf.site {
		return nil, errors.New("--site-compute needs --site")
	}
	var ph http.Handler
	if *pf.site {
		ph, err = siteHandler(pages, *pf.siteCompute, stderr)
	} else {
		ph, err = site.NewHandler(pages...)
	}
	if err != nil {
		return nil, err
	}
	for _, p := range pages {
		fmt.Fprintf(stderr, "page %s: %d objects, %d bytes at %s\n", p.Source, len(p.Objects), p.TotalSize(), site.URLPath(p.Name, "/"))
	}
	return pagesFirst{ph, h}, nil
}

// pagesFirst sends requests under site.Prefix to the pages and the rest to
// files, and passes the HTTP/2 engine's inline offers on to whichever takes
// the request (h2.InlineHandler, h2.FieldHandler), which a ServeMux hides:
// the page servers answer inline so that requests that arrive together are
// sent by urgency (site.Handler.ServeInline), and the file server's cache
// answers from decoded fields.
type pagesFirst struct{ pages, files http.Handler }

func (m pagesFirst) pick(path string) http.Handler {
	if strings.HasPrefix(path, site.Prefix) {
		return m.pages
	}
	return m.files
}

func (m pagesFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.pick(r.URL.Path).ServeHTTP(w, r)
}

func (m pagesFirst) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	ih, ok := m.pick(r.URL.Path).(h2.InlineHandler)
	return ok && ih.ServeInline(w, r)
}

func (m pagesFirst) ServeFields(method, path string, fields []hpack.HeaderField) (int, []hpack.HeaderField, []byte, bool) {
	if fh, ok := m.pick(path).(h2.FieldHandler); ok {
		return fh.ServeFields(method, path, fields)
	}
	return 0, nil, nil, false
}

// listenH3 opens the UDP socket of HTTP/3 and returns the TCP address to
// listen on: the same port, picked here when addr's is 0.
func (pf *pageFlags) listenH3(addr string, useTLS bool) (net.PacketConn, string, error) {
	if !*pf.h3 {
		return nil, addr, nil
	}
	if !useTLS {
		return nil, "", errors.New("--h3 needs --tls")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("--h3: %w", err)
	}
	// A UDP port the kernel picks may be taken on TCP (another process's
	// connection): try the TCP side before keeping it, a few times over.
	for try := 0; ; try++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, "", fmt.Errorf("--h3: %w", err)
		}
		tcpAddr := net.JoinHostPort(host, strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port))
		ln, err := net.Listen("tcp", tcpAddr)
		if err == nil {
			ln.Close()
			return pc, tcpAddr, nil
		}
		pc.Close()
		if port != "0" || try == 9 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, "", fmt.Errorf("--h3: TCP beside udp %s: %w", tcpAddr, err)
		}
	}
}

// setup returns the handler and address of the TCP server and a function
// that starts HTTP/3 once it has listened (a no-op without --h3); stop
// closes what start opened.
func (pf *pageFlags) setup(h http.Handler, addr string, useTLS bool, stderr io.Writer) (http.Handler, string, func(*server.Server) (stop func(), err error), error) {
	h, err := pf.handler(h, stderr)
	if err != nil {
		return nil, "", nil, err
	}
	pc, addr, err := pf.listenH3(addr, useTLS)
	if err != nil || pc == nil {
		return h, addr, func(*server.Server) (func(), error) { return func() {}, nil }, err
	}
	start := func(s *server.Server) (func(), error) {
		h3, err := startH3(s, h, pc, stderr)
		if err != nil {
			pc.Close()
			return nil, err
		}
		return func() { h3.Close(); pc.Close() }, nil
	}
	return server.AltSvc(h, pc.LocalAddr().(*net.UDPAddr).Port), addr, start, nil
}

// startH3 serves h over HTTP/3 on pc with s's certificate (s has listened).
func startH3(s *server.Server, h http.Handler, pc net.PacketConn, stderr io.Writer) (*http3.Server, error) {
	c := s.Certificate()
	if c == nil {
		return nil, errors.New("--h3: the TCP server has no certificate")
	}
	h3, err := server.NewH3(&tls.Config{Certificates: []tls.Certificate{*c}}, h, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return nil, err
	}
	go h3.Serve(pc)
	fmt.Fprintf(stderr, "HTTP/3 on udp %s\n", pc.LocalAddr())
	return h3, nil
}
