// Package drivers holds the bench drivers shunt ships: "http" (HTTP/1.1 and
// HTTP/2 downloads of objects, objects during a background download, and
// synthetic pages, against shunt's server, nginx or h2o) and "tcp" (raw TCP
// transfers over 1..N parallel connections). They register in init.
package drivers

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/content"
)

func init() {
	bench.Drivers.Register("http", httpDriver{})
	bench.Drivers.Register("tcp", tcpDriver{})
}

// objectPath is where an object of n bytes is served: every server serves the
// same files, so the same URL means the same bytes whatever the server.
func objectPath(n int64) string { return "/o/" + strconv.FormatInt(n, 10) }

func pagePath(page string) string { return "/page/" + page + "/index.html" }

func imagePath(page string, i int) string { return fmt.Sprintf("/page/%s/img%02d", page, i) }

// writeObject writes the generated object of n bytes (content.GenAt, the bytes
// /gen/<n> serves) to root+urlPath, so clients verify any server's response.
func writeObject(root, urlPath string, n int64) error {
	file := filepath.Join(root, filepath.FromSlash(urlPath))
	if fi, err := os.Stat(file); err == nil && fi.Size() == n {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, content.NewGenerated(n)); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return f.Close()
}

// sizes is an object's byte counts, parsed once.
type sizes struct {
	size, background, after int64
	html, image             int64
	images                  int
}

func parseSizes(o bench.Object) (sizes, error) {
	var s sizes
	var err error
	parse := func(field, v string, dst *int64) {
		if err != nil || v == "" {
			return
		}
		var n int64
		if n, err = content.ParseSize(v); err != nil {
			err = &bench.FieldError{Field: field, Value: v, Err: err}
			return
		}
		*dst = n
	}
	parse("size", o.Size, &s.size)
	parse("background", o.Background, &s.background)
	parse("background_after", o.BackgroundAfter, &s.after)
	if o.Page != nil {
		parse("page.html", o.Page.HTML, &s.html)
		parse("page.image_size", o.Page.ImageSize, &s.image)
		s.images = o.Page.Images
		if err == nil && (s.images < 1 || s.images > 1000) {
			err = &bench.FieldError{Field: "page.images", Value: strconv.Itoa(s.images), Err: fmt.Errorf("want 1 to 1000")}
		}
	}
	if err == nil && s.after > s.background {
		err = &bench.FieldError{Field: "background_after", Value: o.BackgroundAfter, Err: fmt.Errorf("more than the background's %d bytes", s.background)}
	}
	return s, err
}

// writeObjects writes every file the scenario's objects need under root.
func writeObjects(root string, objs []bench.Object) error {
	for _, o := range objs {
		s, err := parseSizes(o)
		if err != nil {
			return fmt.Errorf("object %s: %w", o.Name, err)
		}
		for _, n := range []int64{s.size, s.background} {
			if n > 0 {
				if err := writeObject(root, objectPath(n), n); err != nil {
					return err
				}
			}
		}
		if o.Page != nil {
			if err := writeObject(root, pagePath(o.Name), s.html); err != nil {
				return err
			}
			for i := 0; i < s.images; i++ {
				if err := writeObject(root, imagePath(o.Name, i), s.image); err != nil {
					return err
				}
			}
		}
	}
	// A tiny object to open connections before timed requests.
	return writeObject(root, objectPath(warmSize), warmSize)
}

const warmSize = 100

// checkSizeOnly is Check for drivers that transfer one sized object: no page,
// no background download.
func checkSizeOnly(driver string, o bench.Object) error {
	s, err := parseSizes(o)
	switch {
	case err != nil:
		return err
	case o.Page != nil || s.background > 0:
		return &bench.FieldError{Field: "object", Value: o.Name, Err: fmt.Errorf("driver %s transfers a size only", driver)}
	case s.size == 0:
		return &bench.FieldError{Field: "size", Err: fmt.Errorf("driver %s needs a size", driver)}
	}
	return nil
}

// protocolPort gives each protocol of a scenario its own server port, so
// that sessions of different protocols never meet on one listener.
func protocolPort(env *bench.Env, p bench.Protocol) int {
	port := serverPort
	for i, q := range env.Scenario.Protocols {
		if q.Name == p.Name {
			port += i
		}
	}
	return port
}
