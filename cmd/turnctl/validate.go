package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// runValidate implements `turnctl validate` (docs/design.md#wire-protocol-v1):
// lines are split on "\n" only, so a trailing "\r" stays in the line (where it
// is JSON whitespace); a final line without "\n" counts, an empty input has no
// lines. Lines of any length are read. It returns 0 when every line decoded, 1
// when one did not, and 1 after reporting a read or write error on stderr.
func runValidate(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReaderSize(stdin, 64<<10)
	out := bufio.NewWriter(stdout)
	status := 0
	var line, verdict []byte
	for {
		var err error
		line, err = readLine(in, line[:0])
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			_, _ = fmt.Fprintln(stderr, "turnctl validate: read stdin:", err)
			return 1
		}
		verdict = verdict[:0]
		ev, diag := protocol.DecodeTurnEvent(line)
		if diag != nil {
			status = 1
			verdict = append(verdict, `{"ok":false,"diagnostic":`...)
			verdict = append(verdict, protocol.EncodeDecoderDiagnostic(*diag)...)
			verdict = append(verdict, "}\n"...)
		} else {
			verdict = append(verdict, `{"ok":true,"event":"`...)
			verdict = append(verdict, ev.Kind...) // one of the three ASCII kinds
			verdict = append(verdict, "\"}\n"...)
		}
		if _, werr := out.Write(verdict); werr != nil {
			_, _ = fmt.Fprintln(stderr, "turnctl validate: write stdout:", werr)
			return 1
		}
		if err == io.EOF {
			break
		}
	}
	if err := out.Flush(); err != nil {
		_, _ = fmt.Fprintln(stderr, "turnctl validate: write stdout:", err)
		return 1
	}
	return status
}

// readLine appends the next line of r, without its "\n", to buf. It returns
// io.EOF with the last line when the input does not end in "\n", and
// (empty, io.EOF) at the end.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, err
		}
	}
}
