//go:build !unix

package main

// terminalSize returns 80x24: the size is not queried on this platform.
func terminalSize(any) (width, height int) { return 80, 24 }
