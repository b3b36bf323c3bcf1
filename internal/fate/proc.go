package fate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// errUnsupported is Run's error where processes cannot be paused.
var errUnsupported = errors.New("fate: pausing a process (SIGSTOP) needs a unix system")

// readyTimeout bounds a dev server's start (the table check included).
const readyTimeout = 60 * time.Second

// procEvent is something the harness did to a process, for evidence.
type procEvent struct {
	At   time.Time
	Slot int
	What string // "start", "ready", "pause", "cont", "kill", "exit"
	By   string // the schedule (or "run")
}

// procs are the dev server processes, one per slot, each on a fixed
// loopback port so that a restarted process takes its slot's place.
type procs struct {
	bin   string
	env   []string
	dir   string
	slots []*slot

	mu     sync.Mutex
	events []procEvent
	wg     sync.WaitGroup // restarts in flight
}

// slot is one dev server's place: its port and its current process.
type slot struct {
	idx  int
	addr string
	p    *procs
	env  []string // the slot's own settings, after the procs' env

	mu         sync.Mutex
	cmd        *exec.Cmd
	exited     chan struct{}
	gen        int
	up         bool // started and answering (paused or not)
	pausedTill time.Time
	paused     bool
	starting   bool
}

func newProcs(bin, dir string, env []string, n int) *procs {
	ps := &procs{bin: bin, env: env, dir: dir}
	for i := range n {
		ps.slots = append(ps.slots, &slot{idx: i, p: ps})
	}
	return ps
}

func (ps *procs) note(slot int, what, by string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.events = append(ps.events, procEvent{At: time.Now(), Slot: slot, What: what, By: by})
}

func (ps *procs) eventsCopy() []procEvent {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]procEvent(nil), ps.events...)
}

// base is slot i's base URL.
func (ps *procs) base(i int) string {
	s := ps.slots[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// start starts slot s's process with endpoint as DYNAMODB_ENDPOINT and
// waits until it answers. A process that exits before it answers (its
// port taken meanwhile by another program) is started again on a new
// port, twice at most.
func (s *slot) start(ctx context.Context, endpoint string) error {
	s.mu.Lock()
	if s.up || s.starting {
		s.mu.Unlock()
		return nil
	}
	s.starting = true
	s.mu.Unlock()
	var err error
	for try := 0; try < 3; try++ {
		if err = s.spawn(ctx, endpoint, try > 0); err == nil || !errors.Is(err, errExited) {
			break
		}
	}
	s.mu.Lock()
	s.starting = false
	s.up = err == nil
	s.mu.Unlock()
	return err
}

// errExited is spawn's error for a process that exited before it
// answered.
var errExited = errors.New("exited before answering")

// spawn runs one dev server process on the slot's address (a new one
// with newAddr, or when it has none yet) and waits until it answers.
func (s *slot) spawn(ctx context.Context, endpoint string, newAddr bool) error {
	s.mu.Lock()
	if s.addr == "" || newAddr {
		addr, err := freeAddr()
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.addr = addr
	}
	s.gen++
	gen, addr := s.gen, s.addr
	s.mu.Unlock()

	logf, err := os.Create(filepath.Join(s.p.dir, fmt.Sprintf("devserver-p%d-%d.log", s.idx, gen)))
	if err != nil {
		return fmt.Errorf("fate: dev server log: %w", err)
	}
	cmd := exec.Command(s.p.bin)
	cmd.Env = append(append(baseEnv(), s.p.env...), s.env...)
	cmd.Env = append(cmd.Env, "ADDR="+addr, "DYNAMODB_ENDPOINT="+endpoint)
	cmd.Stdout, cmd.Stderr = logf, logf
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("fate: start %s: %w", s.p.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		s.p.note(s.idx, "exit", "")
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()
	s.p.note(s.idx, "start", "")
	if err := waitReady(ctx, "http://"+addr, exited); err != nil {
		killProcess(cmd)
		<-exited
		return fmt.Errorf("fate: dev server p%d: %w (log %s)", s.idx, err, logf.Name())
	}
	s.p.note(s.idx, "ready", "")
	return nil
}

// baseEnv is the part of the harness's environment a dev server gets:
// what finds programs and temporary files, and the race detector's
// options; none of the dev server's own settings.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GORACE", "SYSTEMROOT"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("fate: find a port: %w", err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}

// waitReady polls base's capabilities route until it answers 200.
func waitReady(ctx context.Context, base string, exited <-chan struct{}) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := c.Get(base + "/turn/capabilities")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("did not answer within %s", readyTimeout)
}

// isUp reports whether the slot's process runs (paused or not).
func (s *slot) isUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// pause stops the process (SIGSTOP) until d from now, then continues it
// (SIGCONT); pauses that overlap extend one another.
func (s *slot) pause(d time.Duration, by string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up || s.cmd == nil {
		return
	}
	until := time.Now().Add(d)
	if until.After(s.pausedTill) {
		s.pausedTill = until
	}
	if !s.paused {
		s.p.note(s.idx, "pause", by) // before the signal, as a kill
		if err := signalStop(s.cmd); err != nil {
			s.p.note(s.idx, "cont", "")
			return
		}
		s.paused = true
	}
	gen := s.gen
	time.AfterFunc(d, func() { s.cont(gen, false) })
}

// cont continues the process of generation gen once its pause is over
// (or at once with force).
func (s *slot) cont(gen int, force bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || !s.paused || s.cmd == nil {
		return
	}
	if !force && time.Now().Before(s.pausedTill) {
		return
	}
	_ = signalCont(s.cmd)
	s.paused = false
	s.p.note(s.idx, "cont", "")
}

// kill kills the process (SIGKILL) and restarts it on the same port
// after restartAfter.
func (s *slot) kill(restartAfter time.Duration, endpoint, by string) {
	s.mu.Lock()
	if !s.up || s.cmd == nil {
		s.mu.Unlock()
		return
	}
	cmd, exited := s.cmd, s.exited
	// Noted before the signal: a stream the kill cuts ends after it.
	s.p.note(s.idx, "kill", by)
	killProcess(cmd)
	s.up, s.paused = false, false
	s.mu.Unlock()
	<-exited
	s.p.wg.Add(1)
	go func() {
		defer s.p.wg.Done()
		time.Sleep(restartAfter)
		_ = s.start(context.Background(), endpoint)
	}()
}

// stop kills the process for good (end of the run).
func (s *slot) stop() {
	s.mu.Lock()
	cmd, exited, up := s.cmd, s.exited, s.up
	s.up = false
	s.mu.Unlock()
	if cmd != nil && up {
		killProcess(cmd)
		<-exited
	}
}

// settle continues every paused process and restarts every dead one,
// waiting until all answer.
func (ps *procs) settle(ctx context.Context, endpoint func(int) string) error {
	ps.wg.Wait()
	var errs []error
	for _, s := range ps.slots {
		s.mu.Lock()
		gen := s.gen
		s.mu.Unlock()
		s.cont(gen, true)
		if !s.isUp() {
			if err := s.start(ctx, endpoint(s.idx)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (ps *procs) stopAll() {
	ps.wg.Wait()
	for _, s := range ps.slots {
		s.stop()
	}
}
