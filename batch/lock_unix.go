//go:build unix

package batch

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f without waiting, so that a
// second batch appending to the same output refuses to start. Closing f
// releases it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errors.New("another batch is writing to it")
	}
	return err
}
