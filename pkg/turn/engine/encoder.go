package engine

import (
	"net/http"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// streamEncoder is one encoding of a turn on its 200 stream: the NDJSON
// snapshot stream, full or compact (ndjsonStream), or the AG-UI event
// stream (aguiStreamer). Each encodes the same states of the turn (the
// view the model's events build, remembered for checkpoints as the writer
// numbers them) and the same end (the terminal record as stored). The
// engine calls it at three points and nowhere branches on the encoding:
// streamTurn writes its first lines and starts its writer, fate.finish
// hands it the end.
type streamEncoder interface {
	// header sets the stream's media type (and the headers that name
	// its encoding) before the 200 is written.
	header(h http.Header)
	// first returns the stream's first lines: the state seq whose
	// assistant message is first, emitted at now.
	first(now time.Time, seq int64, first protocol.Message) []byte
	// write is the writer goroutine: from after the first lines (written
	// at started) until the end it owns the response body (streamOut),
	// numbering the states it sends (sequencer) and remembering them
	// (liveStates). It closes the streamOut's done when it exits.
	write(started time.Time, seq int64, first protocol.Message)
	// end hands the writer the turn's end and waits for it to exit: rec
	// is the terminal record as the table holds it (the save, or the
	// record the table decided), nil when the outcome is unknown
	// (TURN_OUTCOME_INDETERMINATE).
	end(rec *chat.Turn)
}
