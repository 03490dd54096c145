package page

import (
	"errors"
	"os"
	"testing"
)

func FuzzReadGraph(f *testing.F) {
	for _, file := range pageFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(minimal))
	p, err := Load("testdata/example.har")
	if err != nil {
		f.Fatal(err)
	}
	g, err := p.MarshalGraph()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(g)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadGraph("f.json", data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.File != "f.json" {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		checkReadable(t, p)
	})
}

func FuzzReadHAR(f *testing.F) {
	data, err := os.ReadFile("testdata/example.har")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(wptHAR))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadHAR("f.har", data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.File != "f.har" {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		for _, o := range p.Objects {
			if o.SizeFrom != SizeExplicit || o.Size < 0 {
				t.Fatalf("object %s: size %d from %q", o.ID, o.Size, o.SizeFrom)
			}
		}
		checkReadable(t, p)
	})
}

// checkReadable checks what every page read must satisfy: it validates,
// every object is sized, and it survives MarshalGraph and ReadGraph.
func checkReadable(t *testing.T, p *Page) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("read, but invalid: %v", err)
	}
	for _, o := range p.Objects {
		if o.SizeFrom == "" {
			t.Fatalf("object %s has no size", o.ID)
		}
	}
	g, err := p.MarshalGraph()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadGraph("f.json", g)
	if err != nil {
		t.Fatalf("reading back: %v\n%s", err, g)
	}
	if diff := samePage(p, back); diff != "" {
		t.Fatalf("round trip: %s", diff)
	}
}
