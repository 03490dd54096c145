package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is held by the runner writing an output directory.
const lockFile = ".lock"

// lockDir takes dir's lock, so two runners (a resubmitted task and the task
// still running) never append to one runs file. The kernel drops the lock
// when the process dies, so a killed task leaves nothing to clean up.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is being written by another shunt bench (a task of the same shard still running?): wait for it or stop it", dir)
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
