package sessionapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

const artifactsPath = "/sessions/s1/turns/t1/artifacts"

func TestPutArtifacts(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		f.runTurn("s1", alice, turnSpec{id: "t2"})

		cases := []struct {
			name string
			body string
			want string
		}{
			{"last wins, first position", `{"artifacts":[
				{"entryPath":"reports/index.html","artifactType":"document"},
				{"entryPath":"slides/index.html","artifactType":"presentation"},
				{"entryPath":"reports/index.html","artifactType":"webpage"}]}`,
				`{"artifacts":[{"entryPath":"reports/index.html","artifactType":"webpage"},{"entryPath":"slides/index.html","artifactType":"presentation"}]}`},
			{"replaces the collection", `{"artifacts":[{"entryPath":"a.png","artifactType":"image"}]}`,
				`{"artifacts":[{"entryPath":"a.png","artifactType":"image"}]}`},
			{"paths kept exactly", `{"artifacts":[{"entryPath":"x/a.csv","artifactType":"spreadsheet"},{"entryPath":"y/a.csv","artifactType":"spreadsheet"},{"entryPath":"./a b/<é>.csv","artifactType":"spreadsheet"}]}`,
				`{"artifacts":[{"entryPath":"x/a.csv","artifactType":"spreadsheet"},{"entryPath":"y/a.csv","artifactType":"spreadsheet"},{"entryPath":"./a b/<é>.csv","artifactType":"spreadsheet"}]}`},
			{"empty clears", `{"artifacts":[]}`, `{"artifacts":[]}`},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp := f.do(f.artifacts, put(artifactsPath, host, tc.body))
				if resp.status != http.StatusOK || string(resp.body) != tc.want {
					t.Fatalf("PUT: %d %s, want %s", resp.status, resp.body, tc.want)
				}
				wantJSONHeaders(t, "PUT", resp)
				if got := f.do(f.artifacts, get(artifactsPath, alice)); got.status != http.StatusOK || string(got.body) != tc.want {
					t.Fatalf("GET as owner: %d %s, want %s", got.status, got.body, tc.want)
				}
			})
		}

		// The same path in another turn is another artifact.
		one := `{"artifacts":[{"entryPath":"a.png","artifactType":"image"}]}`
		f.do(f.artifacts, put(artifactsPath, host, one))
		f.do(f.artifacts, put("/sessions/s1/turns/t2/artifacts", host, one))
		f.do(f.artifacts, put(artifactsPath, host, `{"artifacts":[]}`))
		if got := f.do(f.artifacts, get("/sessions/s1/turns/t2/artifacts", alice)); string(got.body) != one {
			t.Errorf("t2 after clearing t1: %s", got.body)
		}
		// History shows the stored collection.
		page := decode[sessionapi.TurnPage](t, "turns", f.do(f.history, get("/sessions/s1/turns?order=asc", alice)))
		if len(page.Turns[0].Artifacts) != 0 || len(page.Turns[1].Artifacts) != 1 {
			t.Errorf("history artifacts %+v / %+v", page.Turns[0].Artifacts, page.Turns[1].Artifacts)
		}
	})
}

func TestPutArtifactsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		f.runTurn("s2", alice, turnSpec{id: "t2"})
		f.runTurn("s3", mallory, turnSpec{id: "t3"})
		stored := `{"artifacts":[{"entryPath":"keep.html","artifactType":"webpage"}]}`
		if resp := f.do(f.artifacts, put(artifactsPath, host, stored)); resp.status != http.StatusOK {
			t.Fatalf("seed: %d %s", resp.status, resp.body)
		}
		ref := func(path, typ string) string {
			return `{"artifacts":[{"entryPath":"ok.html","artifactType":"webpage"},{"entryPath":` + path + `,"artifactType":` + typ + `}]}`
		}

		cases := map[string]struct {
			req    request
			status int
			code   string
		}{
			// Reference values (the shape is right): ARTIFACTS_INVALID.
			"unknown type":            {put(artifactsPath, host, ref(`"x.bin"`, `"binary"`)), 400, protocol.CodeArtifactsInvalid},
			"type wrong case":         {put(artifactsPath, host, ref(`"x.png"`, `"Image"`)), 400, protocol.CodeArtifactsInvalid},
			"empty path":              {put(artifactsPath, host, ref(`""`, `"image"`)), 400, protocol.CodeArtifactsInvalid},
			"absolute path":           {put(artifactsPath, host, ref(`"/etc/passwd"`, `"document"`)), 400, protocol.CodeArtifactsInvalid},
			"dot-dot segment":         {put(artifactsPath, host, ref(`"a/../../b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"dot-dot alone":           {put(artifactsPath, host, ref(`".."`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"backslash":               {put(artifactsPath, host, ref(`"a\\b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"NUL":                     {put(artifactsPath, host, ref(`"a\u0000b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"newline (escaped)":       {put(artifactsPath, host, ref(`"a\nb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"tab (escaped)":           {put(artifactsPath, host, ref(`"a\tb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"ESC":                     {put(artifactsPath, host, ref(`"a\u001b[31mb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"DEL":                     {put(artifactsPath, host, ref(`"a\u007fb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"DEL raw":                 {put(artifactsPath, host, ref("\"a\x7fb.html\"", `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"C1 NEXT LINE":            {put(artifactsPath, host, ref(`"a\u0085b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"C1 CSI":                  {put(artifactsPath, host, ref(`"a\u009bb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"RLO override":            {put(artifactsPath, host, ref(`"a\u202egpj.exe"`, `"image"`)), 400, protocol.CodeArtifactsInvalid},
			"RLO override raw":        {put(artifactsPath, host, ref("\"a\u202egpj.exe\"", `"image"`)), 400, protocol.CodeArtifactsInvalid},
			"LRE embedding":           {put(artifactsPath, host, ref(`"a\u202ab.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"FSI isolate":             {put(artifactsPath, host, ref(`"a\u2068b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"PDI pop isolate":         {put(artifactsPath, host, ref(`"a\u2069b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"RLM mark":                {put(artifactsPath, host, ref(`"a\u200fb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"LINE SEPARATOR":          {put(artifactsPath, host, ref(`"a\u2028b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"ZERO WIDTH JOINER":       {put(artifactsPath, host, ref(`"a\u200db.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"ZERO WIDTH SPACE raw":    {put(artifactsPath, host, ref("\"a\u200bb.html\"", `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"BOM":                     {put(artifactsPath, host, ref(`"\ufeffa.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"SOFT HYPHEN":             {put(artifactsPath, host, ref(`"a\u00adb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"interlinear annotation":  {put(artifactsPath, host, ref(`"a\ufff9b\ufffac\ufffb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"HANGUL CHOSEONG FILLER":  {put(artifactsPath, host, ref(`"a\u115fb.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"HANGUL FILLER raw":       {put(artifactsPath, host, ref("\"a\u3164b.html\"", `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"tag letter (escaped)":    {put(artifactsPath, host, ref(`"a\udb40\udc41b.html"`, `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"cancel tag raw":          {put(artifactsPath, host, ref("\"a\U000E007Fb.html\"", `"webpage"`)), 400, protocol.CodeArtifactsInvalid},
			"raw newline (not JSON)":  {put(artifactsPath, host, ref("\"a\nb.html\"", `"webpage"`)), 400, protocol.CodeRequestInvalidBody},
			"path over 1024 B":        {put(artifactsPath, host, ref(`"`+strings.Repeat("a", 1025)+`"`, `"image"`)), 400, protocol.CodeArtifactsInvalid},
			"empty type":              {put(artifactsPath, host, ref(`"x.png"`, `""`)), 400, protocol.CodeArtifactsInvalid},
			"legacy id shape":         {put(artifactsPath, host, `{"artifacts":[{"id":"artifact-1"}]}`), 400, protocol.CodeRequestInvalidBody},
			"id beside fields":        {put(artifactsPath, host, `{"artifacts":[{"id":"a","entryPath":"x","artifactType":"image"}]}`), 400, protocol.CodeRequestInvalidBody},
			"null list":               {put(artifactsPath, host, `{"artifacts":null}`), 400, protocol.CodeRequestInvalidBody},
			"missing list":            {put(artifactsPath, host, `{}`), 400, protocol.CodeRequestInvalidBody},
			"list not array":          {put(artifactsPath, host, `{"artifacts":{"entryPath":"x","artifactType":"image"}}`), 400, protocol.CodeRequestInvalidBody},
			"bare array":              {put(artifactsPath, host, `[{"entryPath":"x","artifactType":"image"}]`), 400, protocol.CodeRequestInvalidBody},
			"unknown top member":      {put(artifactsPath, host, `{"artifacts":[],"turnId":"t1"}`), 400, protocol.CodeRequestInvalidBody},
			"key case":                {put(artifactsPath, host, `{"Artifacts":[]}`), 400, protocol.CodeRequestInvalidBody},
			"key case beside key":     {put(artifactsPath, host, `{"artifacts":[],"ARTIFACTS":[{"entryPath":"x","artifactType":"image"}]}`), 400, protocol.CodeRequestInvalidBody},
			"EntryPath beside key":    {put(artifactsPath, host, `{"artifacts":[{"entryPath":"x","EntryPath":"y","artifactType":"image"}]}`), 400, protocol.CodeRequestInvalidBody},
			"artifactTYPE beside key": {put(artifactsPath, host, `{"artifacts":[{"entryPath":"x","artifactType":"image","artifactTYPE":"webpage"}]}`), 400, protocol.CodeRequestInvalidBody},
			"long s variant":          {put(artifactsPath, host, `{"artifacts":[],"artifact\u017f":[]}`), 400, protocol.CodeRequestInvalidBody},
			"duplicate top key":       {put(artifactsPath, host, `{"artifacts":[],"artifacts":[]}`), 400, protocol.CodeRequestInvalidBody},
			"duplicate ref key":       {put(artifactsPath, host, `{"artifacts":[{"entryPath":"x","entryPath":"y","artifactType":"image"}]}`), 400, protocol.CodeRequestInvalidBody},
			"missing type":            {put(artifactsPath, host, `{"artifacts":[{"entryPath":"x"}]}`), 400, protocol.CodeRequestInvalidBody},
			"missing path":            {put(artifactsPath, host, `{"artifacts":[{"artifactType":"image"}]}`), 400, protocol.CodeRequestInvalidBody},
			"null path":               {put(artifactsPath, host, `{"artifacts":[{"entryPath":null,"artifactType":"image"}]}`), 400, protocol.CodeRequestInvalidBody},
			"number path":             {put(artifactsPath, host, `{"artifacts":[{"entryPath":5,"artifactType":"image"}]}`), 400, protocol.CodeRequestInvalidBody},
			"null element":            {put(artifactsPath, host, `{"artifacts":[null]}`), 400, protocol.CodeRequestInvalidBody},
			"string element":          {put(artifactsPath, host, `{"artifacts":["x.png"]}`), 400, protocol.CodeRequestInvalidBody},
			"lone surrogate":          {put(artifactsPath, host, ref(`"a\ud800.png"`, `"image"`)), 400, protocol.CodeRequestInvalidBody},
			"invalid UTF-8":           {put(artifactsPath, host, ref("\"a\xff.png\"", `"image"`)), 400, protocol.CodeRequestInvalidBody},
			"trailing data":           {put(artifactsPath, host, `{"artifacts":[]} {}`), 400, protocol.CodeRequestInvalidBody},
			"not JSON":                {put(artifactsPath, host, `{"artifacts":[`), 400, protocol.CodeRequestInvalidBody},
			"empty body":              {request{method: "PUT", target: artifactsPath, as: &host, contentType: "application/json"}, 400, protocol.CodeRequestInvalidBody},
			"JSON string body":        {put(artifactsPath, host, `"{\"artifacts\":[]}"`), 400, protocol.CodeRequestInvalidBody},
			"too large":               {put(artifactsPath, host, `{"artifacts":[],"pad":"`+strings.Repeat("x", 4096)+`"}`), 413, protocol.CodeRequestTooLarge},
			"text/plain":              {request{method: "PUT", target: artifactsPath, as: &host, contentType: "text/plain", body: stored}, 415, protocol.CodeRequestUnsupportedMediaType},
			"no content type":         {request{method: "PUT", target: artifactsPath, as: &host, body: stored}, 415, protocol.CodeRequestUnsupportedMediaType},
			"json-seq":                {request{method: "PUT", target: artifactsPath, as: &host, contentType: "application/jsonx", body: stored}, 415, protocol.CodeRequestUnsupportedMediaType},
			"untrusted owner":         {put(artifactsPath, alice, stored), 403, protocol.CodeRequestForbidden},
			"untrusted stranger":      {put(artifactsPath, mallory, stored), 403, protocol.CodeRequestForbidden},
			"unauthenticated":         {request{method: "PUT", target: artifactsPath, auth: "Bearer", contentType: "application/json", body: stored}, 401, protocol.CodeRequestUnauthenticated},
			"turn of another session": {put("/sessions/s1/turns/t2/artifacts", host, stored), 404, protocol.CodeTurnNotFound},
			"unknown turn":            {put("/sessions/s1/turns/nope/artifacts", host, stored), 404, protocol.CodeTurnNotFound},
			"unknown session":         {put("/sessions/nope/turns/t1/artifacts", host, stored), 404, protocol.CodeSessionNotFound},
			"turn id not SafeId":      {put("/sessions/s1/turns/t%201/artifacts", host, stored), 404, protocol.CodeTurnNotFound},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				resp := f.do(f.artifacts, tc.req)
				wantError(t, name, resp, tc.status, tc.code)
				if got := f.do(f.artifacts, get(artifactsPath, alice)); string(got.body) != stored {
					t.Fatalf("stored collection changed to %s", got.body)
				}
			})
		}
	})
}

func TestGetArtifactsAccess(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1", artifacts: []chat.ArtifactReference{{EntryPath: "a.png", ArtifactType: chat.ArtifactImage}}})
		f.runTurn("s2", alice, turnSpec{id: "t2"})
		cases := map[string]struct {
			req    request
			status int
			code   string
		}{
			"another principal":       {get(artifactsPath, mallory), 404, protocol.CodeSessionNotFound},
			"turn of another session": {get("/sessions/s1/turns/t2/artifacts", alice), 404, protocol.CodeTurnNotFound},
			"unknown turn":            {get("/sessions/s1/turns/t9/artifacts", alice), 404, protocol.CodeTurnNotFound},
			"unknown session":         {get("/sessions/s9/turns/t1/artifacts", alice), 404, protocol.CodeSessionNotFound},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				wantError(t, name, f.do(f.artifacts, tc.req), tc.status, tc.code)
			})
		}
		// A running turn (claimed, not saved) has no artifacts to write yet.
		f.claim("s1", alice, turnSpec{id: "t3"})
		wantError(t, "running turn", f.do(f.artifacts, put("/sessions/s1/turns/t3/artifacts", host, `{"artifacts":[]}`)), 404, protocol.CodeTurnNotFound)
	})
}
