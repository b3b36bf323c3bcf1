//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalSize returns w's terminal width and height in cells, 80x24 when
// unknown.
func terminalSize(w any) (width, height int) {
	f, ok := w.(*os.File)
	if !ok {
		return 80, 24
	}
	conn, err := f.SyscallConn() // not Fd, which would put f in blocking mode
	if err != nil {
		return 80, 24
	}
	var ws *unix.Winsize
	_ = conn.Control(func(fd uintptr) { ws, err = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) })
	if err == nil && ws != nil && ws.Col > 0 && ws.Row > 0 {
		return int(ws.Col), int(ws.Row)
	}
	return 80, 24
}
