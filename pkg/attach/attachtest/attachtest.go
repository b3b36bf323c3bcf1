// Package attachtest posts signed upload forms (attach.Upload) as a
// browser does, for the tests of code that takes attachments.
package attachtest

import (
	"bytes"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/attach"
)

// Post sends up's form to up.URL, as multipart/form-data: its fields, in
// name order, with edit applied (a name matched regardless of case; the
// value "" removes the field), then data as the file, last. It returns
// the answer's status and fails tb only when the request cannot be sent.
func Post(tb testing.TB, up attach.Upload, edit map[string]string, data []byte) int {
	tb.Helper()
	fields := map[string]string{}
	for k, v := range up.Fields {
		fields[k] = v
	}
	for k, v := range edit {
		for old := range fields {
			if strings.EqualFold(old, k) {
				delete(fields, old)
			}
		}
		if v != "" {
			fields[k] = v
		}
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		_ = mw.WriteField(k, fields[k])
	}
	fw, _ := mw.CreateFormFile("file", "upload")
	_, _ = fw.Write(data)
	_ = mw.Close()
	method := up.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, up.URL, &body)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}
