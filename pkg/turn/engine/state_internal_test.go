package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
)

func testFrame(id string) *protocol.RenderFrame {
	return &protocol.RenderFrame{ComponentKey: "chart", InstanceID: id, Props: json.RawMessage(`{}`),
		Fallback: protocol.Fallback{Kind: "chart", Summary: "A chart."}}
}

// TestStateContent: the content stays plain text until a component, then
// is the ordered envelope; parts past the envelope's limits are left out
// and flagged, never encoded into an invalid envelope.
func TestStateContent(t *testing.T) {
	big := strings.Repeat("x", protocol.MaxContentBytes)
	tests := map[string]struct {
		build        func(s *state)
		wantPlain    string // when the content is plain text
		wantParts    []string
		wantOverflow bool
	}{
		"plain": {build: func(s *state) { s.addText("a"); s.addText("b") }, wantPlain: "ab"},
		"component between texts": {
			build:     func(s *state) { s.addText("a"); s.addComponent(testFrame("c1")); s.addText("b") },
			wantParts: []string{"text:a", "component:c1", "text:b"},
		},
		"component first": {
			build:     func(s *state) { s.addComponent(testFrame("c1")); s.addComponent(testFrame("c2")) },
			wantParts: []string{"component:c1", "component:c2"},
		},
		"component after too much text": {
			build:        func(s *state) { s.addText(big); s.addComponent(testFrame("c1")) },
			wantPlain:    big,
			wantOverflow: true,
		},
		"text after the component past the limit": {
			build:        func(s *state) { s.addText("a"); s.addComponent(testFrame("c1")); s.addText(big) },
			wantParts:    []string{"text:a", "component:c1"},
			wantOverflow: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var s state
			tc.build(&s)
			v := s.freeze()
			if v.overflow != tc.wantOverflow {
				t.Errorf("overflow %v, want %v", v.overflow, tc.wantOverflow)
			}
			if tc.wantParts == nil {
				if v.content != tc.wantPlain {
					t.Fatalf("content %.40q, want plain %.40q", v.content, tc.wantPlain)
				}
				return
			}
			dc, d := protocol.DecodeContent(v.content)
			if d != nil || !dc.Complete {
				t.Fatalf("content %.80q: %+v", v.content, d)
			}
			var got []string
			for _, p := range dc.Parts {
				if p.Kind == protocol.ContentText {
					got = append(got, "text:"+p.Text)
				} else {
					got = append(got, "component:"+p.Frame.InstanceID)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.wantParts, ",") {
				t.Fatalf("parts %v, want %v", got, tc.wantParts)
			}
			if s.addText("late") {
				t.Fatal("a frozen state changed")
			}
		})
	}
}

// TestSnapshotPacing: the wait after a streaming snapshot grows with its
// size (SnapshotBytesPerSecond), never below SnapshotInterval nor above
// MaxSnapshotGap, so wire bytes grow linearly with a turn's duration.
func TestSnapshotPacing(t *testing.T) {
	r := bind(&run{h: &handler{opts: Config{SnapshotInterval: 50 * time.Millisecond, SnapshotBytesPerSecond: 4096, MaxSnapshotGap: 2 * time.Second}}})
	for n, want := range map[int]time.Duration{
		0:         50 * time.Millisecond,
		100:       50 * time.Millisecond, // 24 ms at 4 KiB/s: the interval wins
		1024:      250 * time.Millisecond,
		4096:      time.Second,
		8192:      2 * time.Second,
		1 << 20:   2 * time.Second, // the gap cap keeps progress visible
		204800000: 2 * time.Second,
	} {
		if got := r.lines.snapshotGap(n); got != want {
			t.Errorf("gap after %d bytes = %v, want %v", n, got, want)
		}
	}
}
