//go:build linux

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// paced is a turn server whose streams the test writes line by line:
// each submit is answered with the lines sent on next until a terminal
// one, each flushed at once. inputs receives each submit's input.
type paced struct {
	t      *testing.T
	next   chan string // event lines of turn t1 (asSubmitted answers the submitted turn)
	inputs chan string
}

func (p *paced) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ev, diag := protocol.DecodeTurnEvent(body)
	if diag != nil || ev.Submit == nil {
		http.Error(w, "not a submit", http.StatusBadRequest)
		return
	}
	p.inputs <- ev.Submit.Input
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	for {
		select {
		case line := <-p.next:
			_, _ = io.WriteString(w, asSubmitted(line, body))
			w.(http.Flusher).Flush()
			if ev, diag := protocol.DecodeTurnEvent([]byte(line)); diag != nil || ev.Snapshot.Status != protocol.StatusStreaming {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// ptyChat is turnctl chat on a pseudo-terminal: keys are typed on the
// terminal's input and what turnctl draws is applied to a screen model.
type ptyChat struct {
	t      *testing.T
	ptmx   *os.File // the terminal's side
	tty    *os.File // turnctl's stdin and stdout
	output chan []byte
	screen *screen
	exit   chan int
	stderr *bytes.Buffer
}

// startPtyChat runs `turnctl chat args...` with a pseudo-terminal of
// width x height as its stdin and stdout, and waits for its first prompt.
func startPtyChat(t *testing.T, width, height int, args ...string) *ptyChat {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal (Linux has /dev/ptmx; the typed-line tests need one): %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(width), Rows: uint16(height)}); err != nil {
		t.Fatal(err)
	}
	c := &ptyChat{t: t, ptmx: ptmx, tty: tty, output: make(chan []byte, 64), screen: newScreen(t, width),
		exit: make(chan int, 1), stderr: &bytes.Buffer{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(c.output)
		for {
			buf := make([]byte, 4096)
			n, err := ptmx.Read(buf)
			if n > 0 {
				c.output <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = ptmx.Close()
		_ = tty.Close()
		go func() { // let the reader end whatever the test read
			for range c.output {
			}
		}()
		wg.Wait()
	})
	go func() { c.exit <- run(append([]string{"chat"}, args...), tty, tty, c.stderr) }()
	c.waitScreen("the first prompt", func(s string) bool { return s == "you>" })
	return c
}

// waitScreen applies turnctl's output to the screen until cond holds
// for the screen's text. The bound only keeps a broken build from
// hanging the test run; nothing here is timed.
func (c *ptyChat) waitScreen(what string, cond func(string) bool) string {
	c.t.Helper()
	bound := time.After(20 * time.Second)
	for !cond(c.screen.text()) {
		select {
		case b, ok := <-c.output:
			if !ok {
				c.t.Fatalf("the terminal closed waiting for %s; screen:\n%s", what, c.screen.text())
			}
			c.screen.write(string(b))
		case <-bound:
			c.t.Fatalf("no %s; screen:\n%s", what, c.screen.text())
		}
	}
	return c.screen.text()
}

// submitted returns the input of the next turn srv receives, applying
// turnctl's output to the screen meanwhile.
func (c *ptyChat) submitted(srv *paced) string {
	c.t.Helper()
	bound := time.After(20 * time.Second)
	for {
		select {
		case in := <-srv.inputs:
			return in
		case b, ok := <-c.output:
			if !ok {
				c.t.Fatalf("the terminal closed waiting for a turn; screen:\n%s", c.screen.text())
			}
			c.screen.write(string(b))
		case <-bound:
			c.t.Fatalf("no turn submitted; screen:\n%s\nstderr: %s", c.screen.text(), c.stderr)
		}
	}
}

// typeKeys types s on the terminal.
func (c *ptyChat) typeKeys(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.ptmx, s); err != nil {
		c.t.Fatal(err)
	}
}

// wait returns turnctl's exit status once it ended.
func (c *ptyChat) wait() int {
	c.t.Helper()
	select {
	case code := <-c.exit:
		return code
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("turnctl chat did not end; screen:\n%s", c.screen.text())
		return 0
	}
}

// assertRestored fails unless the terminal is back in line mode with
// echo and the signal keys, as before turnctl chat.
func (c *ptyChat) assertRestored() {
	c.t.Helper()
	conn, err := c.tty.SyscallConn()
	if err != nil {
		c.t.Fatal(err)
	}
	var tio *unix.Termios
	if cerr := conn.Control(func(fd uintptr) { tio, err = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); cerr != nil || err != nil {
		c.t.Fatal(cerr, err)
	}
	if want := uint32(unix.ICANON | unix.ECHO | unix.ISIG); tio.Lflag&want != want {
		c.t.Errorf("terminal left with lflag %#x: line mode, echo or signal keys off", tio.Lflag)
	}
}

// lastRow returns the screen's last row.
func lastRow(s string) string { return s[strings.LastIndex(s, "\n")+1:] }

// TestChatKeepsTheTypedLine types on a real pseudo-terminal while an
// answer streams: the typed text is drawn as the last row of the live
// block, never inside it, survives every redraw, and is the next prompt's
// text when the turn ends; Enter then sends the line as edited.
func TestChatKeepsTheTypedLine(t *testing.T) {
	srv := &paced{t: t, next: make(chan string), inputs: make(chan string, 4)}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	c := startPtyChat(t, 60, 24, "-session", "s1", "-url", ts.URL+"/", "-history", "")

	c.typeKeys("hello\r")
	if in := c.submitted(srv); in != "hello" {
		t.Fatalf("first turn's input %q", in)
	}
	srv.next <- eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "Hel", nil), nil)
	block := c.waitScreen("the first snapshot", func(s string) bool { return strings.Contains(s, "[streaming") })

	c.typeKeys("next qux\x7f\x7f")
	got := c.waitScreen("the typed row", func(s string) bool { return lastRow(s) == "you> next q" })
	if got != block+"\nyou> next q" {
		t.Fatalf("typing changed the block:\n%s\nwant\n%s\nyou> next q", got, block)
	}

	srv.next <- eventLine(t, 2, protocol.EventSnapshot, snapshot(protocol.StatusStreaming, "Hello, this answer is longer than one row of the terminal", nil), nil)
	got = c.waitScreen("the second snapshot", func(s string) bool { return strings.Contains(s, "[streaming · seq 2") })
	if lastRow(got) != "you> next q" || strings.Count(got, "next") != 1 || strings.Count(got, "assistant>") != 1 {
		t.Fatalf("after a redraw:\n%s", got)
	}

	srv.next <- eventLine(t, 3, protocol.EventSnapshot, snapshot(protocol.StatusComplete, "Hello, this answer is longer than one row of the terminal.", nil), nil)
	got = c.waitScreen("the prompt after the turn", func(s string) bool { return strings.Contains(s, "[complete") && lastRow(s) == "you> next q" })
	if strings.Count(got, "next") != 1 || !strings.HasPrefix(got, "you> hello\nassistant> Hello, this answer") {
		t.Fatalf("at the turn's end:\n%s", got)
	}

	c.typeKeys("uestion\r")
	if in := c.submitted(srv); in != "next question" {
		t.Fatalf("second turn's input %q, want the line typed across the turn", in)
	}
	// A line ended while the answer streams is the next turn's input.
	c.typeKeys("third\r")
	c.waitScreen("the ended line under the block", func(s string) bool { return lastRow(s) == "you> third" })
	srv.next <- eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusComplete, "Fine.", nil), nil)
	if in := c.submitted(srv); in != "third" {
		t.Fatalf("third turn's input %q", in)
	}
	srv.next <- eventLine(t, 1, protocol.EventSnapshot, snapshot(protocol.StatusComplete, "Done.", nil), nil)
	got = c.waitScreen("the fourth prompt", func(s string) bool { return strings.Count(s, "[complete") == 3 && lastRow(s) == "you>" })
	if !strings.Contains(got, "\nyou> third\nassistant> Done.") {
		t.Errorf("the typed-ahead line is not shown as sent:\n%s", got)
	}

	c.typeKeys("\x04")
	if code := c.wait(); code != 0 {
		t.Errorf("Ctrl-D: exit %d, stderr %q", code, c.stderr)
	}
	c.assertRestored()
}

// TestChatCtrlCAtThePrompt: Ctrl-C at the prompt ends the session with
// the shell's status for it, the terminal put back.
func TestChatCtrlCAtThePrompt(t *testing.T) {
	c := startPtyChat(t, 40, 10, "-session", "s1", "-url", "http://127.0.0.1:1/", "-history", "")
	c.typeKeys("half a line\x03")
	if code := c.wait(); code != exitQuit {
		t.Errorf("exit %d, want %d", code, exitQuit)
	}
	c.assertRestored()
}
