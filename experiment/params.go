package experiment

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shunt-net/shunt/content"
)

// An experiment declares its options once, as the fields of its Config
// struct, and both front ends read that declaration:
//
//	type Config struct {
//		Proto string `param:"proto" enum:"h1,h2" help:"HTTP version"`
//		Conns int    `param:"conns" help:"HTTP/1.1 connections at most"`
//	}
//
// Decode fills a Config from a scenario's params (key: value text) and
// Flags binds the same fields to command-line flags (--conns; underscores in
// keys become dashes), so a scenario and a command line spell every option,
// its values and its default the same way. The default is the value the
// field holds before decoding (the experiment's DefaultConfig). Field types:
// string, bool (true/false), int, int64, float64, time.Duration, Bytes, and
// any type whose pointer implements encoding.TextUnmarshaler (with
// encoding.TextMarshaler on the value for Encode).

// Bytes is a byte count written as content.ParseSize reads it ("64KB", "1MiB", "100").
type Bytes int64

// UnmarshalText parses a size.
func (b *Bytes) UnmarshalText(t []byte) error {
	n, err := content.ParseSize(string(t))
	if err != nil {
		return err
	}
	*b = Bytes(n)
	return nil
}

// MarshalText writes the count in bytes.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(strconv.FormatInt(int64(b), 10)), nil }

type param struct {
	key, help string
	enum      []string
	v         reflect.Value // the field, settable
}

// params lists cfg's tagged fields; cfg must be a pointer to a struct.
func params(cfg any) []param {
	rv := reflect.ValueOf(cfg)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("experiment: options of %T: want a pointer to a struct", cfg))
	}
	rv = rv.Elem()
	var ps []param
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		key := f.Tag.Get("param")
		if key == "" {
			continue
		}
		p := param{key: key, help: f.Tag.Get("help"), v: rv.Field(i)}
		if e := f.Tag.Get("enum"); e != "" {
			p.enum = strings.Split(e, ",")
		}
		ps = append(ps, p)
	}
	return ps
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// set parses s into the field.
func (p param) set(s string) error {
	if p.enum != nil && !slices.Contains(p.enum, s) {
		return fmt.Errorf("want %s", orList(p.enum))
	}
	if p.v.Addr().Type().Implements(textUnmarshaler) {
		return p.v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	switch {
	case p.v.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return errors.New("want a duration such as 300ms or 2s")
		}
		p.v.SetInt(int64(d))
		return nil
	}
	switch p.v.Kind() {
	case reflect.String:
		p.v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil || (s != "true" && s != "false") {
			return errors.New("want true or false")
		}
		p.v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return errors.New("want an integer")
		}
		p.v.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return errors.New("want a number")
		}
		p.v.SetFloat(x)
	default:
		panic(fmt.Sprintf("experiment: option %s: unsupported type %s", p.key, p.v.Type()))
	}
	return nil
}

// text is the field's value as Decode reads it.
func (p param) text() string {
	if m, ok := p.v.Interface().(encoding.TextMarshaler); ok {
		b, err := m.MarshalText()
		if err != nil {
			return fmt.Sprint(p.v.Interface())
		}
		return string(b)
	}
	if p.v.Type() == durationType {
		return time.Duration(p.v.Int()).String()
	}
	return fmt.Sprint(p.v.Interface())
}

func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// Keys lists the option keys cfg declares, in declaration order.
func Keys(cfg any) []string {
	var keys []string
	for _, p := range params(cfg) {
		keys = append(keys, p.key)
	}
	return keys
}

// Decode sets cfg's options from params. Every error names its field
// (params.KEY); an unknown key is an error listing the driver's options.
func Decode(driver string, params map[string]string, cfg any) error {
	ps := paramsByKey(cfg)
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same error first whatever the map order
	var errs []error
	for _, k := range keys {
		p, ok := ps[k]
		if !ok {
			errs = append(errs, &FieldError{Field: "params." + k, Err: fmt.Errorf("unknown parameter of driver %s (want %s)", driver, orList(Keys(cfg)))})
			continue
		}
		if err := p.set(params[k]); err != nil {
			errs = append(errs, &FieldError{Field: "params." + k, Value: params[k], Err: err})
		}
	}
	return errors.Join(errs...)
}

func paramsByKey(cfg any) map[string]param {
	m := map[string]param{}
	for _, p := range params(cfg) {
		m[p.key] = p
	}
	return m
}

// Encode returns cfg's options as params text, omitting those equal to
// def's (a pointer to the same type holding the defaults): the params a
// command line's run records, which Decode turns back into cfg.
func Encode(cfg, def any) map[string]string {
	d := paramsByKey(def)
	out := map[string]string{}
	for _, p := range params(cfg) {
		if t := p.text(); t != d[p.key].text() {
			out[p.key] = t
		}
	}
	return out
}

// FlagName is the command-line spelling of an option key.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// Flags defines a flag on fs for every option of cfg, with the field's
// current value as its default and its help text, except the keys in skip
// (options a command sets otherwise). Parsing the flags sets the fields
// through the same parser Decode uses; the returned function lists the keys
// the command line set, for records and for checks of what was given.
func Flags(fs *flag.FlagSet, cfg any, skip ...string) (given func() []string) {
	set := map[string]bool{}
	for _, p := range params(cfg) {
		if slices.Contains(skip, p.key) {
			continue
		}
		// The back-quoted word names the flag's argument in -help
		// (flag.UnquoteUsage); a bool flag takes none.
		help := p.help
		if p.v.Kind() != reflect.Bool {
			help += " (`" + p.placeholder() + "`)"
		}
		fv := &flagValue{p: p, set: set}
		if p.v.Kind() == reflect.Bool {
			fs.Var(boolFlag{fv}, FlagName(p.key), help)
		} else {
			fs.Var(fv, FlagName(p.key), help)
		}
	}
	return func() []string {
		var keys []string
		for k := range set {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
}

// placeholder names a flag's argument: the enum's values, or the type.
func (p param) placeholder() string {
	switch {
	case p.enum != nil:
		return strings.Join(p.enum, "|")
	case p.v.Type() == reflect.TypeFor[Bytes]():
		return "SIZE"
	case p.v.Type() == durationType:
		return "DURATION"
	}
	switch p.v.Kind() {
	case reflect.Int, reflect.Int64:
		return "N"
	case reflect.Float64:
		return "X"
	}
	return strings.ToUpper(p.key)
}

type flagValue struct {
	p   param
	set map[string]bool
}

func (f *flagValue) String() string {
	if f == nil || !f.p.v.IsValid() {
		return ""
	}
	return f.p.text()
}

func (f *flagValue) Set(s string) error {
	if err := f.p.set(s); err != nil {
		return err
	}
	f.set[f.p.key] = true
	return nil
}

// boolFlag lets a bool option be given as --name alone (true).
type boolFlag struct{ *flagValue }

func (boolFlag) IsBoolFlag() bool { return true }

// String is "" for false, so -help shows no "(default false)".
func (b boolFlag) String() string {
	if s := b.flagValue.String(); s != "false" {
		return s
	}
	return ""
}
