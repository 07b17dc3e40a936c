//go:build !unix

package proc

import (
	"context"
	"errors"
)

// Run needs process groups, which only Unix has: elsewhere it refuses.
func Run(ctx context.Context, spec Spec) (Result, error) {
	return Result{}, errors.New("proc: running a program needs a Unix system (process groups)")
}
