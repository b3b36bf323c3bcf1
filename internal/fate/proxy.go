package fate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// proxy is the fault proxy: one loopback HTTP listener per dev server
// slot (its DYNAMODB_ENDPOINT), each forwarding every HTTP attempt to
// the DynamoDB API server through one ddbfault.Transport, whose rule
// applies the open fault windows and hooks. A transport error becomes a
// dropped connection (the dev server's SDK sees a reset and retries), a
// 500 is answered as a 500, and a hung attempt is held until the dev
// server gives up on it (its attempt timeout closes the connection,
// which ends the request's context).
//
// Below ddbfault, a tap sees DynamoDB's real answers (the ground truth of
// what applied, whatever the dev server was told): the lease expiries
// that claims and renewals applied, and when deciding a lease was
// applied.
type proxy struct {
	target    string // http://host:port of the DynamoDB API server
	ft        *ddbfault.Transport
	listeners []net.Listener
	servers   []*http.Server
	// onHook carries out a hook's action on a slot (kill, pause).
	onHook func(h *hook, slot int)
	// pending are the deliveries of late windows not made yet.
	pending sync.WaitGroup
	// unreachable is set when the DynamoDB API server refused a
	// connection: it died, and the run is void.
	unreachable atomic.Pointer[unreachable]
	// locks keep a session's index Queries apart from its writes (tap).
	locks sync.Map // session id -> *sync.RWMutex

	mu      sync.Mutex
	windows map[string][]*window // by session
	hooks   map[string][]*hook   // by session
	// leases are the applied lease expiries by session and turn id.
	leases map[string]map[string][]leaseMark
	// decided are the times a decision's first write (the session's
	// fence) applied, by session and the decided turn id.
	decided map[string]map[string]time.Time
	// reads are the read attempts by session, for the resume cost;
	// writes the write attempts DynamoDB answered, by session.
	reads  map[string][]readMark
	writes map[string][]writeMark
	// faulted counts faulted attempts by kind and fault, byKind all
	// attempts by kind.
	faulted, byKind map[string]int
}

// unreachable is when and how the DynamoDB API server first refused a
// connection.
type unreachable struct {
	At  time.Time
	Err error
}

func (p *proxy) sessionLock(session string) *sync.RWMutex {
	l, _ := p.locks.LoadOrStore(session, new(sync.RWMutex))
	return l.(*sync.RWMutex)
}

// leaseMark is one applied write of a lease expiry.
type leaseMark struct {
	Applied time.Time // when DynamoDB answered it (Maybe: when the attempt ended)
	Expiry  time.Time
	// Maybe marks a renewal or a claim that reached DynamoDB without an
	// answer the tap could read (its client gave up, or the connection
	// broke): it may have applied, and the store learns whether by a
	// consistent read, which the tap does not see. A line within its
	// expiry is no violation (I8); a fate judged before it is (I2 counts
	// only the leases it saw applied); a submit that sent it may have
	// claimed the turn id (RuleAck).
	Maybe bool
	// Claim marks a claim's lease (a claim, or a takeover that claims),
	// not a renewal's.
	Claim bool
}

// readMark is one read attempt.
type readMark struct {
	At   time.Time
	Slot int
	Op   string
}

// writeMark is one write attempt DynamoDB answered: when, of which kind,
// from which slot, and whether it applied (200).
type writeMark struct {
	At      time.Time
	Slot    int
	Kind    string
	Applied bool
	Item    string // "SESSION", "LIVE" (a live item), or "" (another)
}

// window is a fault on a session's attempts of one kind over a time
// span. A window with Late holds each attempt until its client gives up
// and delivers it Late after it began (ddbfault.ApplyLate with a delay of
// its own): a write that lands long after its caller stopped waiting.
//
// A window with Span opens at the first attempt of its kind at or after
// From and stays open Span from then (a turn's final save comes when
// the turn ends, whenever that is).
type window struct {
	Kind     string // an attempt kind, or "all"
	Fault    ddbfault.Fault
	Late     time.Duration
	From, To time.Time
	Span     time.Duration
	Hits     int
}

// matches reports whether w applies to a at now, opening a Span window
// on its first match (the caller holds the proxy's lock).
func (w *window) matches(a *attemptInfo, now time.Time) bool {
	if w.Kind != "all" && !a.is(w.Kind) || now.Before(w.From) {
		return false
	}
	if w.Span > 0 && w.To.IsZero() {
		w.From, w.To = now, now.Add(w.Span)
	}
	return now.Before(w.To)
}

// hook is an action on the process that sends a session's first attempt
// of one kind after a moment. Phase says when: "before" the attempt is
// forwarded (a killed process's attempt is then never forwarded: its
// write does not apply; a paused process's is forwarded as usual and
// answered when it continues), "applied" once DynamoDB answered it (a
// killed process never gets the answer: its write applied unknown to
// it), or "after" its answer went back.
type hook struct {
	Kind   string
	After  time.Time
	Phase  string
	Action string        // "kill" or "pause"
	For    time.Duration // the pause, or the time until the restart
	Fired  time.Time
	Slot   int
}

type infoKey struct{}

func newProxy(target string, slots int) (*proxy, error) {
	p := &proxy{
		target:  target,
		windows: map[string][]*window{},
		hooks:   map[string][]*hook{},
		leases:  map[string]map[string][]leaseMark{},
		decided: map[string]map[string]time.Time{},
		reads:   map[string][]readMark{},
		writes:  map[string][]writeMark{},
		faulted: map[string]int{},
		byKind:  map[string]int{},
	}
	base := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
		// A forwarded attempt may hold its session's lock (tap): bound it
		// even when its client no longer waits.
		ResponseHeaderTimeout: 30 * time.Second,
	}
	p.ft = ddbfault.New(tap{p: p, base: base})
	p.ft.SetRule(p.rule)
	for i := range slots {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.close()
			return nil, fmt.Errorf("fate: proxy listen: %w", err)
		}
		srv := &http.Server{Handler: p.handler(i), ReadHeaderTimeout: time.Minute}
		p.listeners = append(p.listeners, ln)
		p.servers = append(p.servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	return p, nil
}

// endpoint is slot i's DYNAMODB_ENDPOINT.
func (p *proxy) endpoint(i int) string { return "http://" + p.listeners[i].Addr().String() }

func (p *proxy) close() {
	for _, s := range p.servers {
		_ = s.Close()
	}
}

// addWindow opens a fault window on session's attempts.
func (p *proxy) addWindow(session string, w *window) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.windows[session] = append(p.windows[session], w)
}

// addHook arms a hook on session's attempts.
func (p *proxy) addHook(session string, h *hook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hooks[session] = append(p.hooks[session], h)
}

// clear closes every window and disarms every hook (quiescence).
func (p *proxy) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.windows, p.hooks = map[string][]*window{}, map[string][]*hook{}
}

// checkpointFaultsOpen reports whether a checkpoint fault window of
// session is open at t.
func (p *proxy) checkpointFaultsOpen(session string, t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.windows[session] {
		if (isCheckpoint(w.Kind) || w.Kind == "all") && !t.Before(w.From) && t.Before(w.To) {
			return true
		}
	}
	return false
}

// rule is the ddbfault rule: the first open window matching the attempt
// chooses its fault.
func (p *proxy) rule(at ddbfault.Attempt) ddbfault.Fault {
	a, _ := at.Context.Value(infoKey{}).(*attemptInfo)
	if a == nil {
		return ddbfault.Pass
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.windows[a.Session] {
		if w.Late == 0 && w.matches(a, now) {
			w.Hits++
			p.faulted[a.Kind+"/"+w.Fault.String()]++
			return w.Fault
		}
	}
	return ddbfault.Pass
}

// late returns how late an open Late window delivers a, 0 when none
// does; the caller delivers it and then calls pending.Done.
func (p *proxy) late(a *attemptInfo) time.Duration {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.windows[a.Session] {
		if w.Late > 0 && w.matches(a, now) {
			p.pending.Add(1) // under mu: clear, then Wait, sees it
			w.Hits++
			p.faulted[fmt.Sprintf("%s/applied %s late", a.Kind, w.Late)]++
			return w.Late
		}
	}
	return 0
}

// take fires the first armed hook of phase matching a, if any.
func (p *proxy) take(a *attemptInfo, phase string) *hook {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.hooks[a.Session] {
		if h.Phase == phase && h.Fired.IsZero() && !now.Before(h.After) && a.is(h.Kind) {
			h.Fired, h.Slot = now, a.Slot
			return h
		}
	}
	return nil
}

// fire carries out h on slot.
func (p *proxy) fire(h *hook, slot int) {
	if p.onHook != nil {
		p.onHook(h, slot)
	}
}

// handler serves slot's dev server.
func (p *proxy) handler(slot int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			drop(w)
			return
		}
		a := classify(r.Header.Get("X-Amz-Target"), r.Header.Get(dynamo.PurposeHeader), body)
		a.Slot = slot
		p.mu.Lock()
		p.byKind[a.Op+" "+a.Kind]++
		if a.Kind == kindRead && a.Session != "" {
			p.reads[a.Session] = append(p.reads[a.Session], readMark{At: time.Now(), Slot: slot, Op: a.Op})
		}
		p.mu.Unlock()
		if h := p.take(a, "before"); h != nil {
			p.fire(h, slot)
			if h.Action == "kill" {
				drop(w)
				return
			}
		}
		if d := p.late(a); d > 0 {
			// Delivered d after it began, whatever the client does; the
			// client gets no answer.
			began := time.Now()
			go func() {
				defer p.pending.Done()
				late, err := http.NewRequestWithContext(context.WithValue(context.WithoutCancel(r.Context()), infoKey{}, a),
					r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
				if err != nil {
					return
				}
				late.Header = r.Header.Clone()
				late.Header.Del("Accept-Encoding")
				time.Sleep(time.Until(began.Add(d)))
				if resp, err := p.ft.Base.RoundTrip(late); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			}()
			<-r.Context().Done()
			drop(w)
			return
		}
		applied := p.take(a, "applied")
		ctx := r.Context()
		if applied != nil {
			// The write must land although its process is about to die.
			ctx = context.WithoutCancel(ctx)
		}
		out, err := http.NewRequestWithContext(context.WithValue(ctx, infoKey{}, a), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			drop(w)
			return
		}
		for k, v := range r.Header {
			out.Header[k] = v
		}
		out.Header.Del("Accept-Encoding") // the answer's CRC is over the plain body
		resp, err := p.ft.RoundTrip(out)
		if applied != nil {
			p.fire(applied, slot)
			if applied.Action == "kill" {
				if err == nil {
					_ = resp.Body.Close()
				}
				drop(w)
				return
			}
		}
		if err != nil {
			drop(w) // a lost answer, a hang the client gave up on, or DynamoDB unreachable
			return
		}
		defer func() { _ = resp.Body.Close() }()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			drop(w)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if h := p.take(a, "after"); h != nil {
			p.fire(h, slot)
		}
	})
}

// drop closes the client's connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection
}

// tap is the transport below ddbfault: it records what DynamoDB really
// answered to the writes that decide a lease's life.
type tap struct {
	p    *proxy
	base http.RoundTripper
}

func (t tap) RoundTrip(req *http.Request) (*http.Response, error) {
	a, _ := req.Context().Value(infoKey{}).(*attemptInfo)
	if a != nil && a.Session != "" {
		// dynalite writes an item's index entries before the item, so
		// a Query of an index that reads the item from the table while
		// the item is being created finds none, and dynalite crashes
		// (db/index.js itemSize of undefined). The harness lets no
		// index Query of a session overlap a write of it: one
		// interleaving DynamoDB itself could produce.
		l := t.p.sessionLock(a.Session)
		if a.Op == "Query" && a.Index {
			l.Lock()
			defer l.Unlock()
		} else if a.Op == "UpdateItem" || a.Op == "PutItem" || a.Op == "DeleteItem" {
			l.RLock()
			defer l.RUnlock()
		}
	}
	resp, err := t.base.RoundTrip(req)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		t.p.unreachable.CompareAndSwap(nil, &unreachable{At: time.Now(), Err: err})
	}
	if err != nil {
		t.p.maybeLease(a)
	}
	if err != nil || a == nil {
		return resp, err
	}
	if (a.Op == "UpdateItem" || a.Op == "PutItem") && a.Session != "" {
		t.p.mu.Lock()
		item := ""
		switch {
		case a.SK == "SESSION":
			item = "SESSION"
		case strings.HasSuffix(a.SK, "#LIVE"):
			item = "LIVE"
		}
		t.p.writes[a.Session] = append(t.p.writes[a.Session], writeMark{At: time.Now(), Slot: a.Slot, Kind: a.Kind, Applied: resp.StatusCode == http.StatusOK, Item: item})
		t.p.mu.Unlock()
	}
	if a.Op != "UpdateItem" || a.SK != "SESSION" || resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	answer, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	if rerr != nil {
		t.p.maybeLease(a) // applied, its answer unread
		return resp, nil
	}
	t.p.recordSessionWrite(a, answer, time.Now())
	return resp, nil
}

// maybeLease files a lease write (a renewal, or a claim) that reached
// DynamoDB and got no answer the tap could read: it may have applied.
func (p *proxy) maybeLease(a *attemptInfo) {
	if a == nil || a.Kind != kindRenew && a.Kind != kindClaim || a.Session == "" || a.LeaseTurn == "" || a.Expires <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.leases[a.Session]
	if m == nil {
		m = map[string][]leaseMark{}
		p.leases[a.Session] = m
	}
	m[a.LeaseTurn] = append(m[a.LeaseTurn], leaseMark{Applied: time.Now(), Expiry: time.UnixMilli(a.Expires), Maybe: true, Claim: a.Kind == kindClaim})
}

// recordSessionWrite files an applied session write whose answer shows
// the item (ALL_NEW): the lease expiry it left (claims, renewals, stops:
// whatever the write, whatever the store's version), or the start of a
// decision (a fence token in leaseToken, the decided turn's in
// fencedToken).
func (p *proxy) recordSessionWrite(a *attemptInfo, answer []byte, at time.Time) {
	var out struct {
		Attributes map[string]map[string]any `json:"Attributes"`
	}
	if json.Unmarshal(answer, &out) != nil || out.Attributes == nil {
		return
	}
	str := func(name string) string { s, _ := out.Attributes[name]["S"].(string); return s }
	turn := str("leaseTurnId")
	if turn == "" || a.Session == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if str("fencedToken") != "" {
		m := p.decided[a.Session]
		if m == nil {
			m = map[string]time.Time{}
			p.decided[a.Session] = m
		}
		if _, seen := m[turn]; !seen {
			m[turn] = at
		}
		return
	}
	n, _ := out.Attributes["leaseExpiresAt"]["N"].(string)
	ms, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return
	}
	m := p.leases[a.Session]
	if m == nil {
		m = map[string][]leaseMark{}
		p.leases[a.Session] = m
	}
	m[turn] = append(m[turn], leaseMark{Applied: at, Expiry: time.UnixMilli(ms)})
}

// leaseMarks returns the applied lease expiries of a session's turn.
func (p *proxy) leaseMarks(session, turn string) []leaseMark {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]leaseMark(nil), p.leases[session][turn]...)
}

// lastExpiry is the latest lease expiry applied for any turn.
func (p *proxy) lastExpiry() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var last time.Time
	for _, m := range p.leases {
		for _, marks := range m {
			for _, l := range marks {
				if l.Expiry.After(last) {
					last = l.Expiry
				}
			}
		}
	}
	return last
}

func (p *proxy) decidedAt(session, turn string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.decided[session][turn]
	return t, ok
}

func (p *proxy) writeMarks(session string) []writeMark {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]writeMark(nil), p.writes[session]...)
}

func (p *proxy) readMarks(session string) []readMark {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]readMark(nil), p.reads[session]...)
}

func (p *proxy) faultCounts() (faulted, byKind map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.faulted), maps.Clone(p.byKind)
}
