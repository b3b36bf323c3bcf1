//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package main

import (
	"errors"
	"os"
)

// editMode is not available on this platform: turnctl chat reads whole
// lines as the terminal's own line editing delivers them.
type editMode struct{}

func enterEditMode(*os.File) (*editMode, error) { return nil, errors.ErrUnsupported }

func (*editMode) signals(bool) error { return errors.ErrUnsupported }

func (*editMode) restore() error { return errors.ErrUnsupported }
