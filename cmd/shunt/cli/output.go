package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// output is where a download's body goes (-o PATH). A regular file, or a
// path where nothing is yet, is written under a temporary name beside it
// and renamed over it only when the download is complete and verified, so a
// failed download leaves what was there as it was. A symbolic link is
// followed: its target is what gets replaced, never the link. Anything else
// (a device such as /dev/null, a FIFO) cannot be replaced and is written to
// directly, as curl does.
type output struct {
	path string   // the file to replace (links resolved), or the device
	tmp  *os.File // the temporary file; nil when writing directly
	f    *os.File // what the body is written to
	mode fs.FileMode
}

// openOutput prepares out for a body; seekable asks for a file that takes
// writes at any offset (MP-H2's out-of-order ranges), which a device gets
// through a temporary file copied into it at the end.
func openOutput(out string, seekable bool) (*output, error) {
	path, err := resolveLinks(out)
	if err != nil {
		return nil, err
	}
	o := &output{path: path, mode: 0o644}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case fi.Mode().IsRegular():
		o.mode = fi.Mode().Perm()
	case fi.IsDir():
		return nil, fmt.Errorf("-o %s: is a directory", out)
	default:
		if o.f, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
			return nil, err
		}
		if !seekable {
			return o, nil
		}
	}
	o.tmp, err = os.CreateTemp(tempDir(path, o.f != nil), "."+filepath.Base(path)+".part-*")
	if err != nil {
		if o.f != nil {
			o.f.Close()
		}
		return nil, err
	}
	if o.f == nil {
		o.f = o.tmp
	}
	return o, nil
}

// tempDir is beside the file to be replaced (so rename stays on one file
// system), or the system's for a device that only gets a copy.
func tempDir(path string, device bool) string {
	if device {
		return ""
	}
	return filepath.Dir(path)
}

// resolveLinks follows symbolic links to the path they name, even when the
// last target does not exist yet (the download creates it).
func resolveLinks(p string) (string, error) {
	for range 40 { // as the kernel's limit on nested links
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return "", fmt.Errorf("-o %s: too many levels of symbolic links", p)
}

// File is what the body is to be written to: the temporary file, or the
// device itself.
func (o *output) File() *os.File {
	if o.tmp != nil {
		return o.tmp
	}
	return o.f
}

// Commit delivers a complete, verified body: the temporary file is renamed
// over the target (keeping an existing file's permissions) or copied into
// the device.
func (o *output) Commit() error {
	if o.tmp == nil {
		return o.f.Close()
	}
	if o.f != o.tmp { // a device, through a temporary file
		defer os.Remove(o.tmp.Name())
		defer o.tmp.Close()
		if _, err := o.tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(o.f, o.tmp); err != nil {
			o.f.Close()
			return err
		}
		return o.f.Close()
	}
	err := o.tmp.Chmod(o.mode)
	if cerr := o.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.tmp.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.tmp.Name())
	}
	return err
}

// Abort discards what was written of a failed download: the target stays
// as it was (a device has what it was given).
func (o *output) Abort() {
	if o.tmp != nil {
		o.tmp.Close()
		os.Remove(o.tmp.Name())
	}
	if o.f != nil && o.f != o.tmp {
		o.f.Close()
	}
}
