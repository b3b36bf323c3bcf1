package modeltest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/protocol"
)

const toolConfig = `,"toolConfig":{"tools":[{"toolSpec":{"name":"note","inputSchema":{"json":{"type":"object"}}}}]}`

// onlyResult is a user message of one toolResult block answering t1.
const onlyResult = `{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}],"status":"success"}}]}`

// think opens a request body that enables thinking with budget and
// maxTokens.
func think(budget, maxTokens int) string {
	return fmt.Sprintf(`{"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":%d}},"inferenceConfig":{"maxTokens":%d},`, budget, maxTokens)
}

// reasoningBlock is a reasoning block as the Bedrock fake signs it.
var reasoningBlock = `{"reasoningContent":{"reasoningText":{"text":"Plan","signature":"` + modeltest.Signature("Plan") + `"}}}`

// thought puts reasoningBlock first in an assistant message.
func thought(msg string) string {
	return strings.Replace(msg, `"content":[`, `"content":[`+reasoningBlock+`,`, 1)
}

// redacted puts the fake's redacted reasoning first in an assistant
// message.
func redacted(msg string) string {
	b, _ := json.Marshal(modeltest.RedactedReasoning)
	return strings.Replace(msg, `"content":[`, `"content":[{"reasoningContent":{"redactedContent":`+string(b)+`}},`, 1)
}

// TestValidateConverse: each rule the Bedrock fake enforces rejects the
// request shape Converse rejects, and accepts the shapes it accepts.
func TestValidateConverse(t *testing.T) {
	use := `{"role":"assistant","content":[{"text":"Saving."},{"toolUse":{"toolUseId":"t1","name":"note","input":{"a":1}}}]}`
	res := `{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}],"status":"success"}},{"text":"next"}]}`
	cp := `{"cachePoint":{"type":"default"}}`
	tests := map[string]struct {
		body string
		rule string // "" means valid
	}{
		"text only":                     {`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, ""},
		"tool round trip":               {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,` + res + `]` + toolConfig + `}`, ""},
		"no messages":                   {`{"messages":[]}`, "B1"},
		"starts with assistant":         {`{"messages":[{"role":"assistant","content":[{"text":"hi"}]}]}`, "B1"},
		"roles do not alternate":        {`{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"user","content":[{"text":"b"}]}]}`, "B2"},
		"blank text":                    {`{"messages":[{"role":"user","content":[{"text":" \n"}]}]}`, "B3"},
		"toolUse without toolConfig":    {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,` + res + `]}`, "B4"},
		"toolResult without toolConfig": {`{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}]}}]}]}`, "B4"},
		"invalid toolUseId": {`{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"functions.note:0","name":"note","input":{}}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"functions.note:0","content":[{"text":"ok"}]}}]}]` + toolConfig + `}`, "B5"},
		"input not an object": {`{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"note","input":[1,2]}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}]}}]}]` + toolConfig + `}`, "B5"},
		"duplicate toolUseId": {`{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"note","input":{}}},{"toolUse":{"toolUseId":"t1","name":"note","input":{}}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}]}},{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}]}}]}]` + toolConfig + `}`, "B6"},
		"unanswered toolUse":             {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,{"role":"user","content":[{"text":"next"}]}]` + toolConfig + `}`, "B7"},
		"results after text":             {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,{"role":"user","content":[{"text":"next"},{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}]}}]}]` + toolConfig + `}`, "B7"},
		"conversation ends with toolUse": {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `]` + toolConfig + `}`, "B7"},
		"result for another id":          {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,{"role":"user","content":[{"toolResult":{"toolUseId":"t2","content":[{"text":"ok"}]}}]}]` + toolConfig + `}`, "B8"},
		"result without toolUse":         {`{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"text":"hm"}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}]}}]}]` + toolConfig + `}`, "B8"},
		"blank result":                   {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":""}]}}]}]` + toolConfig + `}`, "B9"},
		"cache points":                   {`{"system":[{"text":"s"},` + cp + `],"messages":[{"role":"user","content":[{"text":"hi"},` + cp + `]}]}`, ""},
		"five cache points":              {`{"system":[{"text":"s"},` + cp + `,` + cp + `],"messages":[{"role":"user","content":[{"text":"hi"},` + cp + `,` + cp + `,` + cp + `]}]}`, "B10"},
		"a cache point of another type":  {`{"messages":[{"role":"user","content":[{"text":"hi"},{"cachePoint":{"type":"forever"}}]}]}`, "B10"},
		"a cache point first":            {`{"system":[` + cp + `,{"text":"s"}],"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "B10"},
		"thinking":                       {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, ""},
		"thinking of another type":       {`{"additionalModelRequestFields":{"thinking":{"type":"on","budget_tokens":2048}},"inferenceConfig":{"maxTokens":4096},"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "B11"},
		"a budget below 1,024":           {think(1000, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "B11"},
		"a budget not below max tokens":  {think(4096, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "B11"},
		"a thinking tool round trip":     {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` + thought(use) + `,` + res + `]` + toolConfig + `}`, ""},
		"redacted reasoning back":        {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` + redacted(use) + `,` + res + `]` + toolConfig + `}`, ""},
		"reasoning left out":             {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,` + res + `]` + toolConfig + `}`, "B12"},
		"reasoning changed":              {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` + strings.Replace(thought(use), "Plan", "Plot", 1) + `,` + res + `]` + toolConfig + `}`, "B12"},
		"reasoning after text": {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` +
			strings.Replace(use, `{"text":"Saving."},`, `{"text":"Saving."},`+reasoningBlock+`,`, 1) + `,` + res + `]` + toolConfig + `}`, "B12"},
		"reasoning from the user":             {`{"messages":[{"role":"user","content":[` + reasoningBlock + `,{"text":"hi"}]}]}`, "B12"},
		"reasoning without thinking is taken": {`{"messages":[{"role":"user","content":[{"text":"hi"}]},` + thought(use) + `,` + res + `]` + toolConfig + `}`, ""},
		"a second round without reasoning": {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` + thought(use) + `,` + onlyResult + `,` +
			strings.ReplaceAll(use, "t1", "t2") + `,` + strings.ReplaceAll(onlyResult, "t1", "t2") + `]` + toolConfig + `}`, ""},
		"a loop whose first round lost its reasoning": {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,` + onlyResult + `,` +
			thought(strings.ReplaceAll(use, "t1", "t2")) + `,` + strings.ReplaceAll(onlyResult, "t1", "t2") + `]` + toolConfig + `}`, "B12"},
		"an earlier turn without reasoning": {think(2048, 4096) + `"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,` + res + `,{"role":"assistant","content":[{"text":"ok"}]},{"role":"user","content":[{"text":"more"}]}]` + toolConfig + `}`, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := modeltest.ValidateConverse([]byte(tc.body))
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("rejected a valid request: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.rule+":") {
				t.Fatalf("error %v, want rule %s", err, tc.rule)
			}
		})
	}
}

// TestValidateChatCompletions: each rule the OpenAI fake enforces
// rejects the request shape it names and accepts the valid ones.
func TestValidateChatCompletions(t *testing.T) {
	const head = `{"model":"m","stream":true,`
	const tools = `,"tools":[{"type":"function","function":{"name":"note","parameters":{"type":"object"}}}]`
	calls := `{"role":"assistant","content":"Saving.","tool_calls":[{"id":"a","type":"function","function":{"name":"note","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"note","arguments":"{}"}}]}`
	tests := map[string]struct {
		body string
		rule string
	}{
		"text only":                       {head + `"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`, ""},
		"tool round trip":                 {head + `"messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"b","content":"B"},{"role":"tool","tool_call_id":"a","content":"A"},{"role":"assistant","content":"Done."},{"role":"user","content":"next"}]` + tools + `}`, ""},
		"tool message without tool_calls": {head + `"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"a","content":"A"}]` + tools + `}`, "O1"},
		"tool message after the run":      {head + `"messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"a","content":"A"},{"role":"tool","tool_call_id":"b","content":"B"},{"role":"user","content":"x"},{"role":"tool","tool_call_id":"a","content":"A"}]` + tools + `}`, "O1"},
		"unknown tool_call_id":            {head + `"messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"c","content":"C"}]` + tools + `}`, "O1"},
		"answered twice":                  {head + `"messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"a","content":"A"},{"role":"tool","tool_call_id":"a","content":"A"}]` + tools + `}`, "O1"},
		"unanswered call":                 {head + `"messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"a","content":"A"},{"role":"user","content":"x"}]` + tools + `}`, "O2"},
		"ends with tool_calls":            {head + `"messages":[{"role":"user","content":"hi"},` + calls + `]` + tools + `}`, "O2"},
		"duplicate ids": {head + `"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"note","arguments":"{}"}},{"id":"a","type":"function","function":{"name":"note","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"a","content":"A"},{"role":"tool","tool_call_id":"a","content":"A"}]` + tools + `}`, "O3"},
		"empty assistant":      {head + `"messages":[{"role":"user","content":"hi"},{"role":"assistant"}]}`, "O4"},
		"tool_calls, no tools": {head + `"messages":[{"role":"user","content":"hi"},` + calls + `,{"role":"tool","tool_call_id":"a","content":"A"},{"role":"tool","tool_call_id":"b","content":"B"}]}`, "O5"},
		"not streaming":        {`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "O6"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := modeltest.ValidateChatCompletions([]byte(tc.body))
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("rejected a valid request: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.rule+":") {
				t.Fatalf("error %v, want rule %s", err, tc.rule)
			}
		})
	}
}

// recorder is a testing.TB that keeps the errors the fakes report.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestFakesReject: a request a fake rejects reaches the provider as that
// API's validation error and is reported to the test; here, a call past
// the script.
func TestFakesReject(t *testing.T) {
	req := model.Request{Messages: []protocol.Message{{Role: protocol.RoleUser, Content: "hi"}}}
	tests := map[string]struct {
		model func(tb testing.TB) model.Model
		id    string
		code  string
	}{
		"bedrock": {func(tb testing.TB) model.Model { return modeltest.NewBedrock(tb).Model() }, modeltest.BedrockModelID, "ValidationException"},
		"openai":  {func(tb testing.TB) model.Model { return modeltest.NewOpenAI(tb).Model() }, modeltest.OpenAIModelID, "invalid_request_error"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{TB: t}
			req.ModelID = tc.id
			_, err := tc.model(rec).Stream(context.Background(), req)
			var me *model.Error
			if !errors.As(err, &me) || me.Code != tc.code || me.Retryable {
				t.Fatalf("error %v, want a non-retryable %s", err, tc.code)
			}
			if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "past the script") {
				t.Fatalf("reported %q", rec.errs)
			}
		})
	}
}
