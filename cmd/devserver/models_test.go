package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// awsIsolated points the AWS SDK's standard chain of this test at nothing
// on the machine: no shared files, no instance metadata, no profile and
// no credentials in the environment (t.Setenv: the test is not parallel).
func awsIsolated(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "",
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "",
	} {
		t.Setenv(k, v)
	}
}

// realModelChat runs one turn through a dev server started with env and
// checks that it answers with reply, the provider having received one
// request holding the input (requests).
func realModelChat(t *testing.T, env map[string]string, reply modeltest.Reply, requests func() [][]byte) {
	t.Helper()
	srv := startServer(t, env)
	lines := submit(t, srv.url+"/turn/", "alice", "s1", "t1", "Who is there?")
	last := lines[len(lines)-1]
	if last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("last line: %s %+v, want a complete snapshot", last.Kind, last.Snapshot)
	}
	if msgs := last.Snapshot.Messages; len(msgs) != 2 || msgs[1].Content != reply.Text {
		t.Fatalf("final messages = %+v, want the user message and %q", msgs, reply.Text)
	}
	reqs := requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0]), "Who is there?") {
		t.Errorf("the provider received %d requests, want one holding the input: %q", len(reqs), reqs)
	}
	srv.stop(t)
}

// TestRealModelsBedrock: MODEL_PROVIDER=bedrock chats through the dev
// server with the real Bedrock client against the fake server, found
// through the SDK's endpoint variable, with credentials from the
// environment as the standard chain finds them. (The openai provider's
// test is models_openai_test.go: it needs the build tag.)
func TestRealModelsBedrock(t *testing.T) {
	awsIsolated(t)
	reply := modeltest.Reply{Text: "Hello from the bedrock fake."}
	fake := modeltest.NewBedrock(t, reply)
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.URL())
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDDEV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dev-secret")
	realModelChat(t, map[string]string{"MODEL_PROVIDER": "bedrock", "MODEL_ID": modeltest.BedrockModelID, "AWS_REGION": "us-east-1"}, reply, fake.Requests)
}

// TestRealModelsWithoutCredentials: a real provider the machine cannot
// reach fails the start with what to set, before any turn.
func TestRealModelsWithoutCredentials(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"bedrock, nothing in the chain":  {map[string]string{"MODEL_PROVIDER": "bedrock", "MODEL_ID": "m", "AWS_REGION": "us-east-1"}, "AWS_PROFILE"},
		"openai, neither key nor server": {map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": "m"}, "OPENAI_API_KEY"},
	} {
		t.Run(name, func(t *testing.T) {
			awsIsolated(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := run(ctx, nil, lookup(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "no credentials") {
				t.Fatalf("run error = %v, want no credentials and a mention of %q", err, tc.want)
			}
		})
	}
}

// TestBedrockPromptCacheReachesTheLedger: with a model that caches, the
// dev server's turns send cachePoint blocks, and the cache tokens the
// fake Bedrock reports (a write for the first turn's new prefix, a read
// for the second's) reach the principal's usage.
func TestBedrockPromptCacheReachesTheLedger(t *testing.T) {
	awsIsolated(t)
	fake := modeltest.NewBedrock(t, modeltest.Reply{Text: "one"}, modeltest.Reply{Text: "two"})
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.URL())
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDDEV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dev-secret")
	srv := startServer(t, map[string]string{"MODEL_PROVIDER": "bedrock", "MODEL_ID": modeltest.BedrockCachingModelID,
		"AWS_REGION": "us-east-1", "SYSTEM_PROMPT": "You answer questions about the fake."})
	for _, turn := range []string{"t1", "t2"} {
		lines := submit(t, srv.url+"/turn/", "alice", "s1", turn, "question "+turn)
		if last := lines[len(lines)-1]; last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
			t.Fatalf("turn %s did not complete: %+v", turn, last)
		}
	}
	for i, body := range fake.Requests() {
		// After the system prompt, after the dev server's tools, at the end of the last message.
		if n := strings.Count(string(body), `"cachePoint"`); n != 3 {
			t.Errorf("request %d has %d cachePoint blocks, want 3: %s", i+1, n, body)
		}
	}
	if u := ledgerUsage(t, srv, "alice"); u.CacheReadTokens != modeltest.CacheTokens || u.CacheWriteTokens != modeltest.CacheTokens {
		t.Errorf("usage cache tokens read %d, write %d; want %d each", u.CacheReadTokens, u.CacheWriteTokens, modeltest.CacheTokens)
	}
	srv.stop(t)
}

// TestReasoningTokensReachTheLedger: echo reports the tokens of its
// "/think" reasoning apart, and GET /usage counts them (in the output
// tokens too).
func TestReasoningTokensReachTheLedger(t *testing.T) {
	srv := startServer(t, nil)
	lines := submit(t, srv.url+"/turn/", "alice", "s1", "t1", "/think abcd efgh")
	if last := lines[len(lines)-1]; last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("turn did not complete: %+v", last)
	}
	// The reasoning "abcd efgh" is 9 runes, 3 tokens; the reply "Echo:
	// /think abcd efgh" 22 runes, 6 tokens: 9 output tokens in all.
	if u := ledgerUsage(t, srv, "alice"); u.ReasoningTokens != 3 || u.OutputTokens != 6+3 {
		t.Errorf("usage %+v, want 3 reasoning tokens of 9 out", u)
	}
	srv.stop(t)
}

// ledgerUsage returns user's counters of the day (GET /usage).
func ledgerUsage(t *testing.T, srv *testServer, user string) api.UsageCounters {
	t.Helper()
	var report api.UsageReport[api.UsageCounters]
	if status := getJSON(t, srv.url+"/history/usage", user, &report); status != http.StatusOK {
		t.Fatalf("GET /usage: %d", status)
	}
	return report.Usage
}
