//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// editMode is a terminal switched to the mode lineEditor reads it in:
// non-canonical (each byte as it is typed, no line editing by the
// terminal), no echo, the input and output translations kept (Enter reads
// as "\n", "\n" prints as a new line), and the signal keys off until
// signals turns them on.
type editMode struct {
	conn  syscall.RawConn
	saved unix.Termios // the attributes to restore
	edit  unix.Termios
}

// enterEditMode switches f, a terminal, to the edit mode; restore puts
// back the attributes it had. It fails when f is not a terminal.
func enterEditMode(f *os.File) (*editMode, error) {
	// SyscallConn, not Fd: Fd would put f in blocking mode, and a read
	// blocked in the kernel outlives f's Close.
	conn, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	m := &editMode{conn: conn}
	if err := m.ioctl(func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
		if err != nil {
			return err
		}
		m.saved, m.edit = *t, *t
		return nil
	}); err != nil {
		return nil, err
	}
	m.edit.Lflag &^= unix.ICANON | unix.ECHO | unix.ECHONL | unix.IEXTEN | unix.ISIG
	m.edit.Cc[unix.VMIN], m.edit.Cc[unix.VTIME] = 1, 0
	if err := m.set(&m.edit); err != nil {
		return nil, err
	}
	return m, nil
}

// ioctl runs f on the terminal's file descriptor.
func (m *editMode) ioctl(f func(fd int) error) error {
	var ferr error
	if err := m.conn.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// set sets the terminal's attributes to t.
func (m *editMode) set(t *unix.Termios) error {
	return m.ioctl(func(fd int) error { return unix.IoctlSetTermios(fd, ioctlSetTermios, t) })
}

// signals turns the signal keys (Ctrl-C, Ctrl-\, Ctrl-Z) on or off: on
// while a turn streams, where Ctrl-C is a SIGINT the turn handles; off at
// a prompt, where lineEditor reads Ctrl-C as a byte.
func (m *editMode) signals(on bool) error {
	t := m.edit
	if on {
		t.Lflag |= unix.ISIG
	}
	return m.set(&t)
}

// restore puts back the attributes the terminal had before enterEditMode.
func (m *editMode) restore() error { return m.set(&m.saved) }
