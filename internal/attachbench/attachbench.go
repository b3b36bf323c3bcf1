// Package attachbench measures a turn that carries one attachment against
// a turn without one, in the same run, for turnbench's attachments
// section (-only attachments, docs/benchmarks.md), on the dev server's
// wiring with its attachment store (benchwire.NewTurnUploads):
//
//   - the upload: the declaration (POST /artifacts/sessions/{id}/uploads)
//     and the signed form's POST of a 1 MiB PNG straight to the store,
//     each from request sent to answer;
//   - the turn: time from the submit sent to the first snapshot line,
//     DynamoDB requests and billed write units (dynamobench.Meter), the
//     attachment store's HEAD and GET calls, and the bytes the process
//     allocated while the turn ran (runtime.MemStats.TotalAlloc: client
//     and functions share the process, so this bounds what the turn
//     function adds: holding the file once, and once more where a
//     provider encodes it);
//   - where the bytes went: the request body bytes each mount received
//     over the whole section: the storage's (/uploads/) against the
//     functions' (/turn/, /history/, /artifacts/).
//
// The plain and the attachment turns alternate, so that the machine's
// noise falls on both alike; figures are medians.
package attachbench

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// ImageBytes is the size of the section's image: 1 MiB.
const ImageBytes = 1 << 20

// Input is both turns' input.
const Input = "What is in this picture?"

// Env is what Run measures on: the bench's table and its clients.
type Env struct {
	// Client is the store's DynamoDB client, Raw an unmetered one for
	// the meter's own size reads (dynamobench.NewMeter).
	Client, Raw dynamo.Client
	// Store is an unmetered store on Table, for waiting.
	Store     chat.Store
	Table     string
	CursorKey []byte
	// Prefix makes the run's principal its own.
	Prefix string
	// Quick measures 3 turns of each kind instead of 20.
	Quick    bool
	Progress func(format string, a ...any)
}

// Turns are one kind's measurements, one entry per turn.
type Turns struct {
	FirstLine []time.Duration
	Accounts  []*dynamobench.Account
	Alloc     []uint64
	// Heads and Reads are the attachment store's calls of each turn.
	Heads, Reads []int64
}

// Result is what Run measured.
type Result struct {
	N            int
	Plain, Image Turns
	// Declare and Post are the two phases of each upload.
	Declare, Post []time.Duration
	// StorageBytes and FunctionBytes are the request body bytes the
	// store and the functions received over the section.
	StorageBytes, FunctionBytes int64
	// Peak is the turn function's peak memory under the emulator
	// (MeasurePeak); nil when it was not measured, PeakSkipped says why.
	Peak        *Peak
	PeakSkipped string
}

// counting is an attachment reader that counts its calls.
type counting struct {
	attach.Reader
	heads, reads atomic.Int64
}

func (c *counting) Head(ctx context.Context, key string) (attach.Object, error) {
	c.heads.Add(1)
	return c.Reader.Head(ctx, key)
}

func (c *counting) Read(ctx context.Context, key string, max int64) ([]byte, error) {
	c.reads.Add(1)
	return c.Reader.Read(ctx, key, max)
}

// Image is the section's image: a PNG signature and ImageBytes in all
// (the turn checks an image's magic bytes, not its pixels).
func Image() []byte {
	b := make([]byte, ImageBytes)
	copy(b, "\x89PNG\r\n\x1a\n")
	for i := 8; i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	return b
}

// Run measures Result.N turns of each kind, alternating.
func Run(ctx context.Context, e Env) (*Result, error) {
	n := 20
	if e.Quick {
		n = 3
	}
	res := &Result{N: n}
	m := dynamobench.NewMeter(e.Client, e.Raw)
	store := dynamo.New(m, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey})
	reader := &counting{}
	w, err := benchwire.NewTurnUploads(store, func(o *turn.Options) {
		reader.Reader = o.Attachments
		o.Attachments = reader
	})
	if err != nil {
		return nil, fmt.Errorf("attachments: %w", err)
	}
	defer w.Close()
	hc := benchwire.NewHTTPClient(2, nil)
	defer hc.CloseIdleConnections()
	subject := e.Prefix + "-attachments"
	c := w.ClientAs(hc, subject)
	p := chat.Principal{Subject: subject, Tenant: auth.DevTenant}
	img := Image()

	// one runs one turn of a new session, with the attachment id when
	// not empty, and files its figures in k.
	one := func(k *Turns, sid, attachmentID string) error {
		var ids []string
		if attachmentID != "" {
			ids = []string{attachmentID}
		}
		m.Take()
		h0, r0 := reader.heads.Load(), reader.reads.Load()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		alloc0 := ms.TotalAlloc
		tid := benchwire.NewID()
		log := benchwire.Follow(func(o client.StreamOptions) (*client.Stream, error) {
			return c.Submit(ctx, client.Submit{SessionID: sid, TurnID: tid, EventID: "e-" + tid, Input: Input, Attachments: ids, StreamOptions: o})
		}, false, false, nil)
		if last := log.Last(); log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
			return fmt.Errorf("turn of %s: %v, last line %+v", sid, log.Err, last)
		}
		runtime.ReadMemStats(&ms)
		k.Alloc = append(k.Alloc, ms.TotalAlloc-alloc0)
		k.FirstLine = append(k.FirstLine, log.Lines[0].At.Sub(log.Sent))
		if err := benchwire.AwaitFree(ctx, e.Store, sid, p); err != nil {
			return err
		}
		k.Accounts = append(k.Accounts, m.Take())
		k.Heads = append(k.Heads, reader.heads.Load()-h0)
		k.Reads = append(k.Reads, reader.reads.Load()-r0)
		return nil
	}
	for i := range n {
		e.Progress("attachments: turn %d of %d of each kind", i+1, n)
		if err := one(&res.Plain, benchwire.NewID(), ""); err != nil {
			return nil, fmt.Errorf("attachments (plain): %w", err)
		}
		sid := benchwire.NewID()
		var declared, posted time.Time
		sent := time.Now()
		id, err := client.Upload(ctx, c, sid, client.UploadFile{Filename: "picture.png", MediaType: "image/png", Size: int64(len(img)), Body: bytes.NewReader(img)},
			func(done, _ int64) {
				if declared.IsZero() {
					declared = time.Now() // the form's first bytes go out: the declaration was answered
				}
			})
		posted = time.Now()
		if err != nil {
			return nil, fmt.Errorf("attachments: upload: %w", err)
		}
		if declared.IsZero() {
			declared = posted
		}
		res.Declare = append(res.Declare, declared.Sub(sent))
		res.Post = append(res.Post, posted.Sub(declared))
		if err := one(&res.Image, sid, id); err != nil {
			return nil, fmt.Errorf("attachments (image): %w", err)
		}
	}
	res.StorageBytes = w.BodyBytes("uploads")
	for _, mount := range []string{"turn", "history", "artifacts"} {
		res.FunctionBytes += w.BodyBytes(mount)
	}
	return res, nil
}

// Median is the median of xs (0 when empty).
func Median[T int64 | uint64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Rows are the section's table rows: what, plain turn, image turn, ratio.
func (r *Result) Rows() [][4]string {
	if r == nil {
		return nil
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	ratio := func(a, b float64) string {
		if a == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", b/a)
	}
	pa, ia := dynamobench.MedianAccount(r.Plain.Accounts), dynamobench.MedianAccount(r.Image.Accounts)
	pf, ifl := Median(r.Plain.FirstLine), Median(r.Image.FirstLine)
	pm, im := Median(r.Plain.Alloc), Median(r.Image.Alloc)
	return append([][4]string{
		{fmt.Sprintf("attachments: a turn with one %d KiB image (measured) against one without (baseline), median of %d each", ImageBytes>>10, r.N), "with", "without", "with / without"},
		{"time to first snapshot", ms(ifl), ms(pf), ratio(float64(pf), float64(ifl))},
		{"DynamoDB requests per turn", fmt.Sprint(ia.Requests), fmt.Sprint(pa.Requests), ratio(float64(pa.Requests), float64(ia.Requests))},
		{"billed write units per turn", fmt.Sprint(ia.WriteUnits()), fmt.Sprint(pa.WriteUnits()), ratio(float64(pa.WriteUnits()), float64(ia.WriteUnits()))},
		{"attachment store calls per turn (HEAD + GET)", fmt.Sprintf("%d + %d", Median(r.Image.Heads), Median(r.Image.Reads)),
			fmt.Sprint(Median(r.Plain.Heads) + Median(r.Plain.Reads)), "-"},
		{"bytes allocated while the turn ran (client and functions, one process)", fmt.Sprintf("%.0f KiB", float64(im)/1024), fmt.Sprintf("%.0f KiB", float64(pm)/1024), ratio(float64(pm), float64(im))},
		{"upload: declaration (artifacts function), then the signed POST to the store", ms(Median(r.Declare)) + ", " + ms(Median(r.Post)), "-", "-"},
		{"request body bytes received over the section: the store, the functions", fmt.Sprintf("%d, %d", r.StorageBytes, r.FunctionBytes), "-", "-"},
	}, r.Peak.rows(r.PeakSkipped)...)
}
