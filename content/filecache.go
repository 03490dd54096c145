package content

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/sys/unix"
)

// Small files are served from memory: opening, reading and closing a file
// for every request costs more syscalls than the HTTP/2 response itself. A
// stat of the path on every request still decides whether the cached bytes
// are the file's (see fileID), so a changed or replaced file is served anew
// at once.
const (
	maxCachedFile = 1 << 20  // larger files are read per request: the open is amortised
	maxCacheBytes = 64 << 20 // all cached bodies together
)

// A file modified within one timestamp tick before it was loaded could be
// rewritten with the same size and times and go unnoticed, so files this
// recent are not cached. Timestamps advance by the kernel's clock tick (at
// most 10 ms) on filesystems that keep nanoseconds, and by whole seconds on
// those that do not, which show as modification times without a fraction.
const (
	racyFileWindow       = 50 * time.Millisecond
	racyFileWindowCoarse = time.Second
)

func racy(mtime time.Time) bool {
	window := racyFileWindow
	if mtime.Nanosecond() == 0 {
		window = racyFileWindowCoarse
	}
	return time.Since(mtime) < window
}

// fileID is what a stat says about a file's identity and version. Two stats
// with equal fileIDs show the same bytes unless the file was rewritten with
// the same size within one timestamp tick, which racy excludes.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
	mode         uint32
}

// idOfStat and idOf read the same fields from x/sys/unix's and syscall's
// copies of struct stat.
func idOfStat(st *unix.Stat_t) fileID {
	return fileID{uint64(st.Dev), uint64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Mode}
}

func idOf(fi fs.FileInfo) (id fileID, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Mode}, true
}

// statValid is how long a stat that confirmed a cached file is trusted:
// requests within it share that stat (it cost 15% of the server's CPU under
// h2load at 16 KB), as h2o 2.2.5's requests of one event-loop iteration share
// one open and fstat of the file. A file changed on disk is served anew
// within statValid.
const statValid = time.Millisecond

// cacheEpoch is what checked times count from (monotonic clock).
var cacheEpoch = time.Now()

// cachedFile is one file's body and the response headers derived from it.
// It is immutable once made but for checked, so requests share it without
// locking.
type cachedFile struct {
	checked atomic.Int64 // time since cacheEpoch of the last stat that found id
	id      fileID
	data    []byte
	modTime time.Time
	etag    string
	// The values of ETag, Content-Type, Accept-Ranges, Content-Length and
	// Last-Modified ("" for none) of a 200 response, in that order; a
	// response copies them and slices the copy: one allocation.
	headerValues [5]string
	// The same headers as HTTP/2 fields, for a preparedWriter: no header
	// map, no allocation.
	fields []hpack.HeaderField
}

type fileCache struct {
	mu      sync.Mutex
	entries map[string]*cachedFile
	bytes   int64
}

// holds reports whether name's contents are cached.
func (c *fileCache) holds(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[name] != nil
}

// quick returns the entry for name if a plain stat relative to dirfd, made
// at most once per statValid, shows the file it was loaded from. The stat follows symlinks without os.Root's
// containment checks, which is safe here: a hit serves bytes that were read
// through the Root under this name, from the very inode now found there.
func (c *fileCache) quick(dirfd int, name string) *cachedFile {
	c.mu.Lock()
	e := c.entries[name]
	c.mu.Unlock()
	if e == nil {
		return nil
	}
	now := int64(time.Since(cacheEpoch))
	if now-e.checked.Load() < int64(statValid) {
		return e
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, 0) != nil || idOfStat(&st) != e.id {
		return nil
	}
	e.checked.Store(now)
	return e
}

func (c *fileCache) get(name string, id fileID) *cachedFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[name]; e != nil && e.id == id {
		return e
	}
	return nil
}

func (c *fileCache) put(name string, e *cachedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]*cachedFile)
	}
	if old := c.entries[name]; old != nil {
		c.bytes -= int64(len(old.data))
		delete(c.entries, name)
	}
	// Eviction is arbitrary (map order): the cache exists for the hot few
	// objects of a benchmark or a page, not as a general-purpose LRU.
	for k, old := range c.entries {
		if c.bytes+int64(len(e.data)) <= maxCacheBytes {
			break
		}
		c.bytes -= int64(len(old.data))
		delete(c.entries, k)
	}
	c.entries[name] = e
	c.bytes += int64(len(e.data))
}

// cached returns the in-memory copy of the regular file name whose stat is
// fi, loading it if it is small and has not changed recently; nil means the
// file is to be served from disk.
func (h *Handler) cached(name string, fi fs.FileInfo) *cachedFile {
	if !fi.Mode().IsRegular() || fi.Size() > maxCachedFile {
		return nil
	}
	id, ok := idOf(fi)
	if !ok {
		return nil
	}
	if e := h.cache.get(name, id); e != nil {
		return e
	}
	if racy(fi.ModTime()) {
		return nil
	}
	e, err := h.load(name, id)
	if err != nil {
		return nil // the disk path reports the error, if it persists
	}
	h.cache.put(name, e)
	return e
}

// load reads the file name expected to have identity id; it fails if the
// file it opens, before or after reading, is not that one.
func (h *Handler) load(name string, id fileID) (*cachedFile, error) {
	f, err := h.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	same := func() bool {
		fi, err := f.Stat()
		if err != nil {
			return false
		}
		got, ok := idOf(fi)
		return ok && got == id
	}
	if !same() {
		return nil, fmt.Errorf("%s changed while loading", name)
	}
	data := make([]byte, id.size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	if !same() {
		return nil, fmt.Errorf("%s changed while loading", name)
	}
	modTime := time.Unix(0, id.mtime)
	// The same Content-Type http.ServeContent would choose, decided once.
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = http.DetectContentType(data[:min(len(data), 512)])
	}
	e := &cachedFile{id: id, data: data, modTime: modTime, etag: fileETag(modTime, id.size)}
	var lastModified string
	if !modTime.IsZero() && !modTime.Equal(time.Unix(0, 0)) { // as http.ServeContent
		lastModified = modTime.UTC().Format(http.TimeFormat)
	}
	e.headerValues = [5]string{e.etag, ctype, "bytes", strconv.Itoa(len(data)), lastModified}
	for i, name := range [...]string{"etag", "content-type", "accept-ranges", "content-length", "last-modified"} {
		// Checked here, once, as the HTTP/2 engine checks a header map's.
		if v := e.headerValues[i]; v != "" && httpguts.ValidHeaderFieldValue(v) {
			e.fields = append(e.fields, hpack.HeaderField{Name: name, Value: v})
		}
	}
	return e, nil
}

// serve answers r from the cached copy, with the ranges and conditionals of
// http.ServeContent. A request with neither takes a shortcut to the same
// 200 response, with headers made once per file instead of per request.
func (e *cachedFile) serve(w http.ResponseWriter, r *http.Request, name string) {
	if !plainRequest(r.Header) {
		w.Header()["Etag"] = []string{e.etag}
		http.ServeContent(w, r, name, e.modTime, bytes.NewReader(e.data))
		return
	}
	e.servePlain(w, r)
}

// servePlain is serve's 200 for a request plainRequest passed.
func (e *cachedFile) servePlain(w http.ResponseWriter, r *http.Request) {
	if pw, ok := w.(preparedWriter); ok {
		pw.WritePrepared(http.StatusOK, e.fields, e.data) // e's fields and data are never modified
		return
	}
	hdr := w.Header()
	v := e.headerValues
	hdr["Etag"] = v[0:1:1]
	hdr["Content-Type"] = v[1:2:2]
	hdr["Accept-Ranges"] = v[2:3:3]
	hdr["Content-Length"] = v[3:4:4]
	if v[4] != "" {
		hdr["Last-Modified"] = v[4:5:5]
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if sw, ok := w.(sharedWriter); ok {
		sw.WriteShared(e.data) // e.data is never modified
	} else {
		w.Write(e.data)
	}
}

// preparedWriter is h2.PreparedWriter: a ResponseWriter that sends a
// whole response from header fields and a body made once, never changed.
type preparedWriter interface {
	WritePrepared(status int, fields []hpack.HeaderField, body []byte) error
}

// sharedWriter is h2.SharedWriter: a ResponseWriter that can send bytes
// without copying them, given that they never change.
type sharedWriter interface {
	WriteShared(p []byte) (int, error)
}

// plainRequest reports whether h has none of the headers that make
// http.ServeContent answer anything but 200 with the whole body. It walks
// h rather than looking the five names up: a lookup hashes its key, and a
// request has a few names (the five differ in length, so each name costs a
// length test).
func plainRequest(h http.Header) bool {
	for k := range h {
		if conditional(k) {
			return false
		}
	}
	return true
}

// plainFields is plainRequest for HTTP/2 fields (lower-case names).
func plainFields(fields []hpack.HeaderField) bool {
	for _, f := range fields {
		if conditional(f.Name) {
			return false
		}
	}
	return true
}

// conditional reports whether a header name, canonical (a header map's)
// or lower-case (HTTP/2's), is one that makes http.ServeContent answer
// anything but 200 with the whole body. (If-Range matters only with Range.)
func conditional(name string) bool {
	switch name {
	case "Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
		"range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since":
		return true
	}
	return false
}

// fileETag is a strong validator from modification time and size, like nginx's.
func fileETag(modTime time.Time, size int64) string {
	return fmt.Sprintf(`"%x-%x"`, modTime.UnixNano(), size)
}
