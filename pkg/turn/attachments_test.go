package turn_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/attachtest"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// attachEnv is a turn handler whose attachments are in an s3attach.Local
// served by an httptest server.
type attachEnv struct {
	*env
	local *s3attach.Local
	model *scriptModel
}

// newAttachEnv is an attachEnv; adjust, when given, changes the
// handler's options after the attachments are set.
func newAttachEnv(t *testing.T, adjust ...func(*turn.Options)) *attachEnv {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	local := s3attach.NewLocal(srv.URL+"/uploads", nil)
	mux.Handle("/uploads/", http.StripPrefix("/uploads", local.Handler()))
	m := &scriptModel{Chunks: []string{"seen"}}
	e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) {
		o.Attachments = local
		for _, f := range adjust {
			f(o)
		}
	})
	return &attachEnv{env: e, local: local, model: m}
}

// upload stores data as subject's attachment of session sid through a
// signed form, declared as mediaType and filename, usable until useBy;
// it returns the attachment id.
func (a *attachEnv) upload(t *testing.T, subject, sid, mediaType, filename string, data []byte, useBy time.Time) string {
	t.Helper()
	id := attach.NewID()
	obj := attach.Object{Key: attach.Key(attach.Owner("t", subject), sid, id), MediaType: mediaType, Size: int64(len(data)), Filename: filename, UseBy: useBy}
	up, err := a.local.PresignUpload(context.Background(), obj, attach.UploadExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if got := attachtest.Post(t, up, nil, data); got != http.StatusNoContent {
		t.Fatalf("upload: %d", got)
	}
	return id
}

// submitWith submits input with the attachments ids as subject.
func (a *attachEnv) submitWith(t *testing.T, subject, sid, tid, input string, ids ...string) result {
	t.Helper()
	return a.submitLineage(t, subject, sid, tid, input, nil, ids...)
}

// submitLineage is submitWith with a lineage (nil: a plain submit).
func (a *attachEnv) submitLineage(t *testing.T, subject, sid, tid, input string, lineage *protocol.Lineage, ids ...string) result {
	t.Helper()
	b, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "ev-submit", SessionID: sid, TurnID: tid, EmittedAt: "2026-07-11T03:00:00.000Z", Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: input, Attachments: ids, Lineage: lineage},
	})
	if err != nil {
		t.Fatal(err)
	}
	var hdr map[string]string
	if subject != "" {
		hdr = map[string]string{"X-Test-Subject": subject}
	}
	return readResult(t, a.post(t, context.Background(), "/", b, hdr))
}

var (
	pngData = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{3}, 500)...)
	pdfData = append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("p"), 300)...)
)

// TestAttachmentsReachTheModel: a turn's attachments become its user
// message's parts (image, file with its name) in the stream and in
// history, their bytes reach the model, and the next turn's model call
// holds them again from the context.
func TestAttachmentsReachTheModel(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t)
	later := time.Now().Add(time.Hour)
	img := a.upload(t, "alice", "s", "image/png", "cat.png", pngData, later)
	doc := a.upload(t, "alice", "s", "application/pdf", "Q3 report.pdf", pdfData, later)
	r := a.submitWith(t, "", "s", "t1", "what is this?", img, doc)
	r.want(t, http.StatusOK, "")
	user := r.terminal(t).Messages[0]
	if user.Role != protocol.RoleUser || len(user.Parts) != 2 {
		t.Fatalf("user message %+v", user)
	}
	p0, p1 := user.Parts[0], user.Parts[1]
	if p0.Type != "image" || *p0.Source != turn.AttachmentSource+img || *p0.MimeType != "image/png" || p0.Filename != nil {
		t.Errorf("image part %+v", p0)
	}
	if p1.Type != "file" || *p1.Source != turn.AttachmentSource+doc || *p1.MimeType != "application/pdf" || *p1.Filename != "Q3 report.pdf" {
		t.Errorf("file part %+v", p1)
	}
	stored := history(t, a.env, "s")
	if len(stored) != 1 || len(stored[0].Messages[0].Parts) != 2 {
		t.Fatalf("history %+v", stored)
	}
	reqs := a.model.requests()
	got := reqs[0].Attachments
	if len(got) != 2 || !bytes.Equal(got[turn.AttachmentSource+img].Data, pngData) || got[turn.AttachmentSource+doc].Filename != "Q3 report.pdf" ||
		got[turn.AttachmentSource+doc].Format != "pdf" || got[turn.AttachmentSource+img].Kind != "image" {
		t.Fatalf("model attachments %+v", got)
	}

	a.submitWith(t, "", "s", "t2", "and now?").want(t, http.StatusOK, "")
	reqs = a.model.requests()
	if again := reqs[len(reqs)-1].Attachments; len(again) != 2 || !bytes.Equal(again[turn.AttachmentSource+doc].Data, pdfData) {
		t.Errorf("the next turn's model call holds %d attachments, want t1's 2", len(again))
	}
	if parts := r.terminal(t).Messages[0].Parts; len(parts) != 2 {
		t.Errorf("parts %+v", parts)
	}
}

// TestAttachmentRefusals: every attachment a turn may not use is a typed
// 4xx before anything is stored or sent to a model.
func TestAttachmentRefusals(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t)
	later, past := time.Now().Add(time.Hour), time.Now().Add(-time.Second)
	good := a.upload(t, "alice", "s", "image/png", "cat.png", pngData, later)
	bobs := a.upload(t, "bob", "s", "image/png", "cat.png", pngData, later)
	otherSession := a.upload(t, "alice", "s2", "image/png", "cat.png", pngData, later)
	expired := a.upload(t, "alice", "s", "image/png", "old.png", pngData, past)
	notPNG := a.upload(t, "alice", "s", "image/png", "fake.png", []byte("<svg onload=alert(1)>"), later)
	var docs []string
	for range attach.MaxDocsPerTurn + 1 {
		docs = append(docs, a.upload(t, "alice", "s", "text/plain", "a.txt", []byte("hello"), later))
	}
	for _, tc := range []struct {
		name   string
		ids    []string
		status int
		code   string
	}{
		{"never uploaded", []string{attach.NewID()}, 404, protocol.CodeAttachmentNotFound},
		{"not an attachment id", []string{"att-1"}, 404, protocol.CodeAttachmentNotFound},
		{"another principal's", []string{bobs}, 404, protocol.CodeAttachmentNotFound},
		{"another session's", []string{otherSession}, 404, protocol.CodeAttachmentNotFound},
		{"one good, one missing", []string{good, attach.NewID()}, 404, protocol.CodeAttachmentNotFound},
		{"past its use-by", []string{expired}, 410, protocol.CodeAttachmentExpired},
		{"bytes of another type", []string{notPNG}, 400, protocol.CodeAttachmentInvalid},
		{"too many documents", docs, 400, protocol.CodeAttachmentInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.submitWith(t, "", "s", "t-"+strings.NewReplacer(" ", "-", "'", "", ",", "").Replace(tc.name), "look", tc.ids...)
			r.want(t, tc.status, tc.code)
			if strings.Contains(string(r.raw), "svg") || strings.Contains(string(r.raw), "att_") {
				t.Errorf("the body echoes the input: %s", r.raw)
			}
		})
	}
	if n := a.model.calls.Load(); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
	if _, err := a.store.GetSession(context.Background(), "s", alice); err == nil {
		t.Error("a refused submit created the session")
	}
	// The same turn id sent again with other attachments is another input.
	a.submitWith(t, "", "s", "t1", "look", good).want(t, http.StatusOK, "")
	a.submitWith(t, "", "s", "t1", "look").want(t, http.StatusUnprocessableEntity, protocol.CodeTurnIDReused)
	a.submitWith(t, "", "s", "t1", "look", good).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)

	// Without an attachment store, any attachment is unknown.
	plain := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"x"}}, nil)
	(&attachEnv{env: plain}).submitWith(t, "", "s", "t1", "look", good).want(t, http.StatusNotFound, protocol.CodeAttachmentNotFound)
}

// failingAttachments is an attachment store whose reads fail (a store that
// answers 500, or a hung call cut by its timeout).
type failingAttachments struct {
	attach.Store
	failHead, failRead bool
}

func (s *failingAttachments) Head(ctx context.Context, key string) (attach.Object, error) {
	if s.failHead {
		return attach.Object{}, context.DeadlineExceeded
	}
	return s.Store.Head(ctx, key)
}

func (s *failingAttachments) Read(ctx context.Context, key string, limit int64) ([]byte, error) {
	if s.failRead {
		return nil, errors.New("s3: 500 InternalError")
	}
	return s.Store.Read(ctx, key, limit)
}

// TestAttachmentStoreFaults: a store that fails while a submit's
// attachments are checked is a retryable 500 with nothing stored and no
// model call; one that fails while an earlier turn's attachment is read
// for the context leaves that file out and the turn completes.
func TestAttachmentStoreFaults(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t)
	later := time.Now().Add(time.Hour)
	img := a.upload(t, "alice", "s", "image/png", "cat.png", pngData, later)
	fs := &failingAttachments{Store: a.local, failHead: true}
	m := &scriptModel{Chunks: []string{"seen"}}
	e := newEnv(t, newStoreMemory(), m, func(o *turn.Options) { o.Attachments = fs })
	f := &attachEnv{env: e}
	r := f.submitWith(t, "", "s", "t1", "look", img)
	r.want(t, http.StatusInternalServerError, protocol.CodeServerInternal)
	if !r.errD.Retryable || m.calls.Load() != 0 || strings.Contains(string(r.raw), "InternalError") {
		t.Fatalf("answer %s after %d model calls", r.raw, m.calls.Load())
	}
	if _, err := e.store.GetSession(context.Background(), "s", alice); err == nil {
		t.Error("a failed check created the session")
	}
	fs.failHead = false
	f.submitWith(t, "", "s", "t1", "look", img).want(t, http.StatusOK, "")
	fs.failRead = true
	f.submitWith(t, "", "s", "t2", "and now?").want(t, http.StatusOK, "")
	reqs := m.requests()
	if got := reqs[len(reqs)-1].Attachments; len(got) != 0 {
		t.Errorf("the next turn's model call holds %d attachments, want the unreadable one left out", len(got))
	}
}

// TestAttachmentUsedOnce: an attachment goes with the turn that first
// sent it: another turn naming it is 400 ATTACHMENT_INVALID with nothing
// stored and no model call, while the same turn id sent again is
// answered as a replay, a turn that replaces it (an edit) may keep it,
// and a refused submit gives back the other attachments it named.
func TestAttachmentUsedOnce(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t)
	later := time.Now().Add(time.Hour)
	img := a.upload(t, "alice", "s", "image/png", "cat.png", pngData, later)
	doc := a.upload(t, "alice", "s", "text/plain", "notes.txt", []byte("notes"), later)
	a.submitWith(t, "", "s", "t1", "look", img).want(t, http.StatusOK, "")
	calls := a.model.calls.Load()

	r := a.submitWith(t, "", "s", "t2", "look again", doc, img)
	r.want(t, http.StatusBadRequest, protocol.CodeAttachmentInvalid)
	if strings.Contains(string(r.raw), "att_") {
		t.Errorf("the body echoes the input: %s", r.raw)
	}
	if a.model.calls.Load() != calls {
		t.Error("a refused submit reached the model")
	}
	if page := history(t, a.env, "s"); len(page) != 1 {
		t.Errorf("history holds %d turns, want t1 alone", len(page))
	}
	a.submitWith(t, "", "s", "t1", "look", img).want(t, http.StatusConflict, protocol.CodeTurnAlreadyCompleted)
	// doc went back when t2 was refused.
	a.submitWith(t, "", "s", "t3", "read this", doc).want(t, http.StatusOK, "")

	edit := protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "t1", SourceMessageID: "t1.u"}
	a.submitLineage(t, "", "s", "t4", "look closer", &edit, img).want(t, http.StatusOK, "")
	a.submitWith(t, "", "s", "t5", "and this?", doc).want(t, http.StatusBadRequest, protocol.CodeAttachmentInvalid)
}

// usesFail is a store whose UseAttachments fails as a write whose
// outcome the store could not resolve.
type usesFail struct {
	chat.Store
	fail bool
}

func (s *usesFail) UseAttachments(ctx context.Context, req chat.UseAttachmentsRequest) error {
	if s.fail {
		return errors.New("use attachment: operation error DynamoDB: UpdateItem: 500")
	}
	return s.Store.UseAttachments(ctx, req)
}

// TestAttachmentUseFault: a record of use that fails is a retryable 500
// with nothing stored and no model call; sent again, the turn runs.
func TestAttachmentUseFault(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t)
	img := a.upload(t, "alice", "s", "image/png", "cat.png", pngData, time.Now().Add(time.Hour))
	st := &usesFail{Store: newStoreMemory(), fail: true}
	m := &scriptModel{Chunks: []string{"seen"}}
	e := &attachEnv{env: newEnv(t, st, m, func(o *turn.Options) { o.Attachments = a.local })}
	r := e.submitWith(t, "", "s", "t1", "look", img)
	r.want(t, http.StatusInternalServerError, protocol.CodeServerInternal)
	if !r.errD.Retryable || m.calls.Load() != 0 || strings.Contains(string(r.raw), "DynamoDB") {
		t.Fatalf("answer %s after %d model calls", r.raw, m.calls.Load())
	}
	if _, err := st.GetSession(context.Background(), "s", alice); err == nil {
		t.Error("a failed record created the session")
	}
	st.fail = false
	e.submitWith(t, "", "s", "t1", "look", img).want(t, http.StatusOK, "")
}

// TestAttachmentsInTheContextBudget: attachments count in the context
// budget with their turn (an image engine.ImageTokens, a document its
// bytes over four), so that an earlier turn whose files do not fit is
// left out whole, files and text alike.
func TestAttachmentsInTheContextBudget(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t, func(o *turn.Options) { o.Definition.Limits.ContextTokens = turn.ImageTokens + 1_000 })
	m := a.model
	later := time.Now().Add(time.Hour)
	img1 := a.upload(t, "alice", "s", "image/png", "one.png", pngData, later)
	img2 := a.upload(t, "alice", "s", "image/png", "two.png", pngData, later)
	doc := a.upload(t, "alice", "s", "text/plain", "big.txt", bytes.Repeat([]byte("w"), 12_000), later)

	a.submitWith(t, "", "s", "t1", "first", img1).want(t, http.StatusOK, "")
	a.submitWith(t, "", "s", "t2", "second", img2).want(t, http.StatusOK, "")
	a.submitWith(t, "", "s", "t3", "third").want(t, http.StatusOK, "")
	last := m.LastRequest()
	if _, ok := last.Attachments[turn.AttachmentSource+img2]; !ok || len(last.Attachments) != 1 {
		t.Errorf("t3's request holds %d attachments, want t2's image alone (t1 does not fit beside it)", len(last.Attachments))
	}
	for _, msg := range last.Messages {
		if strings.Contains(msg.Content, "first") {
			t.Error("t3's request holds t1's text, whose image was left out")
		}
	}

	// A document of 12,000 bytes (3,000 tokens) does not fit at all.
	a.submitWith(t, "", "s", "t4", "read", doc).want(t, http.StatusOK, "")
	a.submitWith(t, "", "s", "t5", "and?").want(t, http.StatusOK, "")
	if got := m.LastRequest().Attachments; len(got) != 0 {
		t.Errorf("t5's request holds %d attachments, want none", len(got))
	}
}

// aguiParts is an AG-UI run of session sid and run tid whose last user
// message is text and the given content parts (JSON objects).
func aguiParts(sid, tid, text string, parts ...string) []byte {
	content := `{"type":"text","text":` + strconv.Quote(text) + `}`
	for _, p := range parts {
		content += "," + p
	}
	return []byte(`{"threadId":"` + sid + `","runId":"` + tid + `","messages":[{"id":"m1","role":"user","content":[` + content + `]}]}`)
}

func urlPart(kind, id string) string {
	return `{"type":"` + kind + `","source":{"type":"url","value":"attachment:` + id + `"}}`
}

func dataPart(kind, mediaType string, data []byte) string {
	return `{"type":"` + kind + `","source":{"type":"data","value":"` + base64.StdEncoding.EncodeToString(data) + `","mimeType":"` + mediaType + `"}}`
}

// TestAGUIAttachments: an AG-UI run's image and document parts are the
// turn's attachments: an uploaded one named by attachment:<id>, inline
// bytes stored as an attachment of the session (kind-n.format) under an
// id the run determines; both become the user message's parts and reach
// the model; the same run id with other bytes is another input.
func TestAGUIAttachments(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t)
	img := a.upload(t, "alice", "s", "image/png", "cat.png", pngData, time.Now().Add(time.Hour))
	body := aguiParts("s", "r1", "compare these", urlPart("image", img), dataPart("document", "text/plain", []byte("hello, inline")))
	a.aguiRun(t, "agui-attachments", body)
	inline := attach.InlineID("s", "r1", 1)
	user := a.stored(t, "s", "r1").Messages[0]
	if user.Content != "compare these" || len(user.Parts) != 2 {
		t.Fatalf("user message %+v", user)
	}
	if p := user.Parts[0]; p.Type != "image" || *p.Source != turn.AttachmentSource+img {
		t.Errorf("image part %+v", p)
	}
	if p := user.Parts[1]; p.Type != "file" || *p.Source != turn.AttachmentSource+inline || *p.MimeType != "text/plain" || *p.Filename != "document-1.txt" {
		t.Errorf("inline part %+v", p)
	}
	got := a.model.requests()[0].Attachments
	if len(got) != 2 || !bytes.Equal(got[turn.AttachmentSource+img].Data, pngData) || string(got[turn.AttachmentSource+inline].Data) != "hello, inline" {
		t.Fatalf("model attachments %+v", got)
	}
	obj, err := a.local.Head(context.Background(), attach.Key(attach.Owner("t", "alice"), "s", inline))
	if err != nil || obj.Size != int64(len("hello, inline")) || obj.MediaType != "text/plain" || obj.UseBy.IsZero() {
		t.Fatalf("stored inline file %+v, %v", obj, err)
	}
	status, raw := a.aguiPost(t, aguiParts("s", "r1", "compare these", urlPart("image", img), dataPart("document", "text/plain", []byte("other bytes"))), nil)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(raw), protocol.CodeTurnIDReused) {
		t.Errorf("the run id with other inline bytes: %d %s", status, raw)
	}
	// A run sent again with the same parts is the same turn.
	if status, raw := a.aguiPost(t, body, nil); status != http.StatusConflict || !strings.Contains(string(raw), protocol.CodeTurnAlreadyCompleted) {
		t.Errorf("the same run again: %d %s", status, raw)
	}
}

// TestAGUIAttachmentRefusals: a part the turn may not use is a typed 4xx
// that repeats nothing of the input; nothing is stored, no model called.
func TestAGUIAttachmentRefusals(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t)
	for _, tc := range []struct {
		name   string
		part   string
		status int
		code   string
	}{
		{"an https URL", `{"type":"image","source":{"type":"url","value":"https://169.254.169.254/latest/meta-data"}}`, 400, protocol.CodeRequestInvalidBody},
		{"a provider file", `{"type":"document","source":{"type":"file","value":"file-abc"}}`, 400, protocol.CodeRequestInvalidBody},
		{"an audio part", `{"type":"audio","source":{"type":"data","value":"AAAA","mimeType":"audio/wav"}}`, 400, protocol.CodeRequestInvalidBody},
		{"an attachment never uploaded", urlPart("image", attach.NewID()), 404, protocol.CodeAttachmentNotFound},
		{"an inline type not accepted", dataPart("image", "image/svg+xml", []byte("<svg onload=alert(1)>")), 415, protocol.CodeAttachmentTypeUnsupported},
		{"an inline document as an image", dataPart("image", "application/pdf", pdfData), 400, protocol.CodeAttachmentInvalid},
		{"inline bytes of another type", dataPart("image", "image/png", []byte("<svg onload=alert(1)>")), 400, protocol.CodeAttachmentInvalid},
		{"an attachment named twice", urlPart("image", "att_AAAAAAAAAAAAAAAAAAAAAAAAAA") + "," + urlPart("image", "att_AAAAAAAAAAAAAAAAAAAAAAAAAA"), 400, protocol.CodeRequestInvalidBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tid := "r-" + strings.ReplaceAll(tc.name, " ", "-")
			status, raw := a.aguiPost(t, aguiParts("s", tid, "look", tc.part), nil)
			if status != tc.status || !strings.Contains(string(raw), `"`+tc.code+`"`) {
				t.Fatalf("%d %s, want %d %s", status, raw, tc.status, tc.code)
			}
			for _, echo := range []string{"svg", "169.254", "file-abc", "att_"} {
				if strings.Contains(string(raw), echo) {
					t.Errorf("the body echoes the input (%s): %s", echo, raw)
				}
			}
			if _, err := a.store.FindTurn(context.Background(), "s", tid, alice); err == nil {
				t.Error("a refused run stored its turn")
			}
		})
	}
	if n := a.model.calls.Load(); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
	// Without a store that writes, inline bytes are an attachment it does
	// not hold.
	ro := newEnv(t, newStoreMemory(), &scriptModel{Chunks: []string{"x"}}, func(o *turn.Options) { o.Attachments = readOnly{a.local} })
	status, raw := ro.aguiPost(t, aguiParts("s", "r9", "look", dataPart("image", "image/png", pngData)), nil)
	if status != http.StatusNotFound || !strings.Contains(string(raw), protocol.CodeAttachmentNotFound) {
		t.Errorf("inline bytes without a writer: %d %s", status, raw)
	}
}

// readOnly hides its store's other methods: an attach.Reader only.
type readOnly struct{ attach.Reader }
