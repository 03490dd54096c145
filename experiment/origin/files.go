// Package origin runs the servers experiments fetch from, in a namespace of
// an experiment's network: shunt's server (in process), nginx or h2o, all
// serving the same generated objects (content.NewGenerated) at the same
// URLs, so a client verifies any server's bytes; and it sets the
// congestion control of the namespaces whose programs cannot set it per
// socket.
package origin

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment"
)

// ObjectPath is where an object of n bytes is served: every server serves the
// same files, so the same URL means the same bytes whatever the server.
func ObjectPath(n int64) string { return "/o/" + strconv.FormatInt(n, 10) }

// PagePath is the HTML of a synthetic page.
func PagePath(page string) string { return "/page/" + page + "/index.html" }

// ImagePath is image i of a synthetic page.
func ImagePath(page string, i int) string { return fmt.Sprintf("/page/%s/img%02d", page, i) }

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

// Sizes are an object's byte counts, parsed once.
type Sizes struct {
	Size, Background, After int64
	HTML, Image             int64
	Images                  int
}

// ParseSizes parses an object's sizes; errors name the field.
func ParseSizes(o experiment.Object) (Sizes, error) {
	var s Sizes
	var err error
	parse := func(field, v string, dst *int64) {
		if err != nil || v == "" {
			return
		}
		var n int64
		if n, err = content.ParseSize(v); err != nil {
			err = &experiment.FieldError{Field: field, Value: v, Err: err}
			return
		}
		*dst = n
	}
	parse("size", o.Size, &s.Size)
	parse("background", o.Background, &s.Background)
	parse("background_after", o.BackgroundAfter, &s.After)
	if o.Page != nil {
		parse("page.html", o.Page.HTML, &s.HTML)
		parse("page.image_size", o.Page.ImageSize, &s.Image)
		s.Images = o.Page.Images
		if err == nil && (s.Images < 1 || s.Images > 1000) {
			err = &experiment.FieldError{Field: "page.images", Value: strconv.Itoa(s.Images), Err: fmt.Errorf("want 1 to 1000")}
		}
	}
	if err == nil && s.After > s.Background {
		err = &experiment.FieldError{Field: "background_after", Value: o.BackgroundAfter, Err: fmt.Errorf("more than the background's %d bytes", s.Background)}
	}
	return s, err
}

// WriteObjects writes every file the scenario's objects need under root.
func WriteObjects(root string, objs []experiment.Object) error {
	for _, o := range objs {
		s, err := ParseSizes(o)
		if err != nil {
			return fmt.Errorf("object %s: %w", o.Name, err)
		}
		for _, n := range []int64{s.Size, s.Background} {
			if n > 0 {
				if err := writeObject(root, ObjectPath(n), n); err != nil {
					return err
				}
			}
		}
		if o.Page != nil {
			if err := writeObject(root, PagePath(o.Name), s.HTML); err != nil {
				return err
			}
			for i := 0; i < s.Images; i++ {
				if err := writeObject(root, ImagePath(o.Name, i), s.Image); err != nil {
					return err
				}
			}
		}
	}
	// A tiny object to open connections before timed requests.
	return writeObject(root, ObjectPath(WarmSize), WarmSize)
}

// WarmSize is the tiny object clients fetch to open connections before
// timed requests.
const WarmSize = 100

// CheckSizeOnly is Check for drivers that transfer one sized object: no page,
// no background download.
func CheckSizeOnly(driver string, o experiment.Object) error {
	s, err := ParseSizes(o)
	switch {
	case err != nil:
		return err
	case o.Page != nil || s.Background > 0:
		return &experiment.FieldError{Field: "object", Value: o.Name, Err: fmt.Errorf("driver %s transfers a size only", driver)}
	case s.Size == 0:
		return &experiment.FieldError{Field: "size", Err: fmt.Errorf("driver %s needs a size", driver)}
	}
	return nil
}
