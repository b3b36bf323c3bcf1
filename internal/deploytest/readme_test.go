package deploytest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/motoserver"
	"github.com/turnstream/turnstream/pkg/config"
)

// deployDoc is the page whose "Deploy" and "After deploy: your first turn"
// sections hold the deploy commands (it was the README's until the README
// became a short introduction).
const deployDoc = "docs/deploy.md"

// readmeBlock is a shell block of deployDoc's "Deploy" and "After
// deploy: your first turn" sections. Each is preceded by a marker line:
// "<!-- deploytest: run NAME ... -->" for a block TestREADMEDeploy runs,
// or "<!-- deploytest: not run: REASON -->".
type readmeBlock struct {
	run    bool
	name   string // of a run block
	reason string // why a block is not run
	code   string
	line   int
}

var markerRE = regexp.MustCompile(`^<!-- deploytest: (?:run (\S+)[^>]*|not run: (.+)) -->$`)

// readmeDeploy returns the shell blocks of the deploy sections in order,
// and the sections' text.
func readmeDeploy(t *testing.T) ([]readmeBlock, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(deployDoc)))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\n## Deploy\n")
	after := strings.Index(text, "\n## After deploy: your first turn\n")
	if start < 0 || after < start {
		t.Fatal(deployDoc + ` has no "## Deploy" followed by "## After deploy: your first turn"`)
	}
	end := strings.Index(text[after+1:], "\n## ")
	if end < 0 {
		end = len(text)
	} else {
		end += after + 1
	}
	section := text[start:end]
	firstLine := strings.Count(text[:start], "\n") + 2
	var blocks []readmeBlock
	lines := strings.Split(section, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		open := i
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		if lines[open] != "```sh" {
			continue
		}
		b := readmeBlock{code: strings.Join(lines[open+1:i], "\n") + "\n", line: firstLine + open}
		m := []string(nil)
		if open > 0 {
			m = markerRE.FindStringSubmatch(lines[open-1])
		}
		switch {
		case m == nil:
			t.Errorf("%s:%d: a shell block of the deploy sections without a deploytest marker (run NAME, or not run: REASON)", deployDoc, b.line)
			continue
		case m[1] != "":
			b.run, b.name = true, m[1]
		default:
			b.reason = m[2]
		}
		blocks = append(blocks, b)
	}
	return blocks, section
}

// runBlock returns the code of the run block name.
func runBlock(t *testing.T, blocks []readmeBlock, name string) string {
	t.Helper()
	for _, b := range blocks {
		if b.run && b.name == name {
			return b.code
		}
	}
	t.Fatalf(`%s: no "<!-- deploytest: run %s -->" block in the deploy sections`, deployDoc, name)
	return ""
}

// logical joins continued lines ("\" at the end) into one.
func logical(code string) string { return strings.ReplaceAll(code, "\\\n", " ") }

var (
	commandRE  = regexp.MustCompile(`(?:^|[\s;&|(])((?:aws|sam) [^;&|)\n]*)`)
	assignRE   = regexp.MustCompile(`(?m)(?:^|[\s;(])([A-Z][A-Z0-9_]*)=`)
	useRE      = regexp.MustCompile(`\$\{?([A-Z][A-Z0-9_]*)`)
	overrideRE = regexp.MustCompile(`--parameter-overrides((?:\s+[A-Za-z0-9]+=\S*)+)`)
)

// externalVariables are what the reader brings: credentials, a token and
// the change set name sam deploy prints.
var externalVariables = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"HOST_KEY_ID", "HOST_SECRET_KEY", "HOST_SESSION_TOKEN", "JWT", "CHANGE_SET",
}

// TestREADMEDeployCommands checks deployDoc's deploy sections without
// running them: every block is marked run or not run (with the reason),
// every aws and sam command names --region, every variable is set before
// it is used, the URL variables come from the stack's outputs, every
// --parameter-overrides value is one template.yaml accepts, the Go
// version is go.mod's, samconfig.toml deploys the template's defaults
// (TurnTimeout the code's 5 minutes), `make deploy` names the region, and
// --guided writes only an ignored file.
func TestREADMEDeployCommands(t *testing.T) {
	t.Parallel()
	blocks, section := readmeDeploy(t)
	root := repoRoot(t)
	params := templateParameters(t)

	for _, b := range blocks {
		code := logical(b.code)
		for _, m := range commandRE.FindAllStringSubmatch(code, -1) {
			cmd := strings.TrimSpace(m[1])
			if cmd == "sam build" || strings.HasPrefix(cmd, "sam build ") || strings.HasSuffix(cmd, "--version") {
				continue // local only
			}
			if !strings.Contains(cmd, "--region") {
				t.Errorf("%s:%d: %q does not name --region", deployDoc, b.line, cmd)
			}
		}
		for _, m := range overrideRE.FindAllStringSubmatch(code, -1) {
			for _, kv := range strings.Fields(m[1]) {
				k, v, _ := strings.Cut(kv, "=")
				checkParameterValue(t, fmt.Sprintf("%s:%d", deployDoc, b.line), params, k, v)
			}
		}
	}

	// Variables are set (in this or an earlier block) before they are used.
	set := map[string]bool{}
	for _, v := range externalVariables {
		set[v] = true
	}
	for _, b := range blocks {
		for _, m := range assignRE.FindAllStringSubmatch(b.code, -1) {
			set[m[1]] = true
		}
		for _, m := range useRE.FindAllStringSubmatch(b.code, -1) {
			if !set[m[1]] {
				t.Errorf("%s:%d: $%s is used before any block sets it", deployDoc, b.line, m[1])
			}
		}
	}
	outputs := runBlock(t, blocks, "outputs")
	for _, v := range []string{"TURN_URL", "HISTORY_URL", "ARTIFACTS_URL"} {
		if !regexp.MustCompile(`(?m)^` + v + `=\$\(out \w+\)`).MatchString(outputs) {
			t.Errorf(`%s: the "outputs" block does not set %s from an output`, deployDoc, v)
		}
	}
	for _, key := range templateOutputs(t) {
		if !strings.Contains(outputs, "$(out "+key+")") {
			t.Errorf(`%s: the "outputs" block does not read the output %s`, deployDoc, key)
		}
	}

	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(goMod)
	if goVersion == nil || !strings.Contains(section, "| Go | "+string(goVersion[1])+" or later") {
		t.Errorf("%s's deploy prerequisites do not name go.mod's Go version %s", deployDoc, goVersion)
	}

	if strings.Contains(section, "--guided") {
		for _, m := range regexp.MustCompile("`sam deploy --guided[^`]*`").FindAllString(section, -1) {
			if m = strings.Join(strings.Fields(m), " "); !strings.Contains(m, "--config-file samconfig.local.toml") {
				t.Errorf("%s: %s would rewrite the committed samconfig.toml (add --config-file samconfig.local.toml)", deployDoc, m)
			}
		}
		ignore, err := os.ReadFile(filepath.Join(root, ".gitignore"))
		if err != nil || !regexp.MustCompile(`(?m)^/?samconfig\.local\.toml$`).Match(ignore) {
			t.Error(".gitignore does not ignore samconfig.local.toml, where " + deployDoc + "'s --guided writes")
		}
	}

	checkSamconfig(t, root, params)

	out, err := exec.Command("make", "-s", "-n", "-C", root, "deploy", "REGION=eu-west-1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sam deploy --region eu-west-1 --stack-name turnstream") {
		t.Errorf("make -n deploy REGION=eu-west-1: %v\n%s\nwant sam deploy --region eu-west-1 --stack-name turnstream", err, out)
	}
}

// templateParameters returns template.yaml's Parameters section.
func templateParameters(t *testing.T) map[string]map[string]any {
	t.Helper()
	raw := rawTemplate(t)
	out := map[string]map[string]any{}
	for k, v := range raw["Parameters"].(map[string]any) {
		out[k] = v.(map[string]any)
	}
	return out
}

// templateOutputs returns the names of template.yaml's outputs, sorted.
func templateOutputs(t *testing.T) []string {
	t.Helper()
	var keys []string
	for k := range rawTemplate(t)["Outputs"].(map[string]any) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// rawTemplate is template.yaml as JSON, intrinsics unprocessed.
func rawTemplate(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := processYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// checkParameterValue: name is a parameter of template.yaml and value one
// it accepts (AllowedValues, AllowedPattern, a number within its range).
func checkParameterValue(t *testing.T, where string, params map[string]map[string]any, name, value string) {
	t.Helper()
	p, ok := params[name]
	if !ok {
		t.Errorf("%s: %s is not a parameter of template.yaml", where, name)
		return
	}
	if allowed, ok := p["AllowedValues"].([]any); ok && !slices.ContainsFunc(allowed, func(a any) bool { return fmt.Sprint(a) == value }) {
		t.Errorf("%s: %s=%s is not one of %v", where, name, value, allowed)
	}
	if pattern, ok := p["AllowedPattern"].(string); ok && !regexp.MustCompile(pattern).MatchString(value) {
		t.Errorf("%s: %s=%s does not match %s", where, name, value, pattern)
	}
	if p["Type"] == "Number" {
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Errorf("%s: %s=%s is not a number", where, name, value)
		}
		if lo, ok := p["MinValue"].(float64); ok && n < lo {
			t.Errorf("%s: %s=%s below %v", where, name, value, lo)
		}
		if hi, ok := p["MaxValue"].(float64); ok && n > hi {
			t.Errorf("%s: %s=%s above %v", where, name, value, hi)
		}
	}
}

// checkSamconfig: the parameter_overrides samconfig.toml deploys are
// template.yaml parameters with their template defaults (so `sam deploy`
// and a stack made from the template alone behave alike), and the turn
// timeout is pkg/config's default.
func checkSamconfig(t *testing.T, root string, params map[string]map[string]any) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var section, overrides string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = line
		}
		if v, ok := strings.CutPrefix(line, "parameter_overrides = "); ok && section == "[default.deploy.parameters]" {
			if overrides, err = strconv.Unquote(v); err != nil {
				t.Fatalf("samconfig.toml: parameter_overrides %s: %v", v, err)
			}
		}
	}
	if overrides == "" {
		t.Fatal("samconfig.toml: no parameter_overrides in [default.deploy.parameters]")
	}
	deployed := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+)="([^"]*)"`).FindAllStringSubmatch(overrides, -1) {
		deployed[m[1]] = m[2]
		checkParameterValue(t, "samconfig.toml", params, m[1], m[2])
		if def := fmt.Sprint(params[m[1]]["Default"]); def != m[2] {
			t.Errorf("samconfig.toml deploys %s=%s, template.yaml's default is %s", m[1], m[2], def)
		}
	}
	cfg, err := config.FromLookup(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(int(cfg.TurnTimeout.Seconds())); deployed["TurnTimeout"] != want {
		t.Errorf("samconfig.toml deploys TurnTimeout=%q, want pkg/config's default TURN_TIMEOUT, %s s", deployed["TurnTimeout"], want)
	}
}

// TestREADMEDeploy runs deployDoc's deploy blocks marked "run" with the
// AWS CLI against moto's server standing in for AWS, in a bash that
// carries their variables from block to block, and checks what they did:
// the deploy policy is accepted, every URL variable holds its stack
// output, a backup of the table exists, the change set is read, the
// stack, its table and its functions' log groups are gone, and the
// artifacts example writes only when ArtifactsTrustedSubject is set (curl
// is replaced by a recorder: there is no stack to call).
func TestREADMEDeploy(t *testing.T) {
	t.Parallel()
	bash := requireTool(t, "bash", "bash")
	requireTool(t, "aws", "the AWS CLI (pip install awscli)")
	python := requireTool(t, "python3", "Python 3 with boto3")
	blocks, _ := readmeDeploy(t)
	root := repoRoot(t)
	setupBlock := runBlock(t, blocks, "setup")
	region := regexp.MustCompile(`(?m)^REGION=(\S+)`).FindStringSubmatch(setupBlock)
	stack := regexp.MustCompile(`(?m)^STACK=(\S+)`).FindStringSubmatch(setupBlock)
	if region == nil || stack == nil {
		t.Fatalf(`%s: the "setup" block does not set REGION and STACK:\n%s`, deployDoc, setupBlock)
	}
	hostStack := stack[1] + "-host"

	endpoint := motoserver.Start(t)
	dir := t.TempDir()
	env := awsEnv(endpoint, dir)
	standin := func(mode string, stacks []map[string]any) []byte {
		t.Helper()
		req, _ := json.Marshal(map[string]any{"endpoint": endpoint, "region": region[1], "stacks": stacks})
		cmd := exec.CommandContext(t.Context(), python, filepath.Join("testdata", "moto_standin.py"), mode)
		cmd.Stdin, cmd.Env = bytes.NewReader(req), env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("moto_standin.py %s: %v\n%s", mode, err, stderr.String())
		}
		return out
	}
	var made map[string]struct {
		Outputs   map[string]string `json:"outputs"`
		Functions []string          `json:"functions"`
		ChangeSet string            `json:"changeSet"`
	}
	outputKeys := templateOutputs(t)
	if err := json.Unmarshal(standin("setup", []map[string]any{
		{"name": stack[1], "trustedSubject": "", "outputs": outputKeys},
		{"name": hostStack, "trustedSubject": "arn:aws:sts::123456789012:assumed-role/workspace-host/host", "outputs": outputKeys},
	}), &made); err != nil {
		t.Fatal(err)
	}

	// curl records its arguments instead of calling a stack.
	bin := filepath.Join(dir, "bin")
	curlLog := filepath.Join(dir, "curl.log")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte("#!/bin/sh\nprintf 'curl' >> \"$CURL_LOG\"\nfor a in \"$@\"; do printf ' [%s]' \"$a\" >> \"$CURL_LOG\"; done\necho >> \"$CURL_LOG\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CURL_LOG="+curlLog,
		"CHANGE_SET="+made[stack[1]].ChangeSet, "AWS_SESSION_TOKEN=")
	vars := "printf '@var %s=%s\\n' TURN_URL \"$TURN_URL\" HISTORY_URL \"$HISTORY_URL\" ARTIFACTS_URL \"$ARTIFACTS_URL\" TableName \"$TABLE_NAME\" CursorSecretArn \"$CURSOR_SECRET_ARN\" DashboardName \"$DASHBOARD\" AttachmentsBucketName \"$ATTACHMENTS_BUCKET\"\n"
	run := func(name string, parts ...string) string {
		t.Helper()
		script := "set -e -o pipefail\n" + strings.Join(parts, "\necho @step\n")
		cmd := exec.CommandContext(t.Context(), bash, "-c", script)
		cmd.Dir, cmd.Env = root, env // file://docs/deploy-policy.json is relative to the checkout
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: the deploy blocks failed: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), stderr.String())
		}
		t.Logf("%s: deploy blocks ran in %v", name, time.Since(start).Round(time.Millisecond))
		return stdout.String()
	}

	// The stack as deployed (ArtifactsTrustedSubject empty): policy,
	// outputs, artifacts, backup, change set, teardown, the table.
	out := run("default stack", setupBlock, runBlock(t, blocks, "policy"), runBlock(t, blocks, "outputs"), vars,
		runBlock(t, blocks, "artifacts"), runBlock(t, blocks, "backup"), runBlock(t, blocks, "changeset"),
		runBlock(t, blocks, "teardown"), runBlock(t, blocks, "delete-table"), runBlock(t, blocks, "delete-bucket"))
	if !strings.Contains(out, ":policy/turnstream-deploy\n") {
		t.Errorf("the policy block did not print the new policy's ARN:\n%s", out)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^@var (\w+)=(.*)$`).FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2]
	}
	want := made[stack[1]].Outputs
	for v, key := range map[string]string{"TURN_URL": "TurnFunctionUrl", "HISTORY_URL": "HistoryFunctionUrl",
		"ARTIFACTS_URL": "ArtifactsFunctionUrl", "TableName": "TableName", "CursorSecretArn": "CursorSecretArn",
		"DashboardName": "DashboardName", "AttachmentsBucketName": "AttachmentsBucketName"} {
		if got[v] == "" || got[v] != want[key] {
			t.Errorf("after the outputs block %s = %q, want the output %s %q", v, got[v], key, want[key])
		}
	}
	if !strings.Contains(out, "ArtifactsTrustedSubject is empty") {
		t.Errorf("the artifacts block did not say that nobody may write artifact references:\n%s", out)
	}
	calls := readLines(t, curlLog)
	if len(calls) != 1 || strings.Contains(calls[0], "[PUT]") || !strings.Contains(calls[0], "["+want["ArtifactsFunctionUrl"]+"sessions/curl-first/turns/t1/artifacts]") {
		t.Errorf("curl calls %q, want only the GET of the artifacts", calls)
	}
	if !regexp.MustCompile(`(?m)^arn:aws:dynamodb:[^ ]+:table/` + regexp.QuoteMeta(want["TableName"]) + `/backup/`).MatchString(out) {
		t.Errorf("the backup block did not print a backup ARN of %s:\n%s", want["TableName"], out)
	}
	var st struct {
		Stacks, LogGroups, Tables, Backups, Policies, Buckets []string
	}
	if err := json.Unmarshal(standin("state", nil), &st); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(st.Stacks, stack[1]) || slices.Contains(st.Tables, want["TableName"]) {
		t.Errorf("after teardown: stacks %v, tables %v; want %s and its table %s gone", st.Stacks, st.Tables, stack[1], want["TableName"])
	}
	if slices.Contains(st.Buckets, want["AttachmentsBucketName"]) {
		t.Errorf("after teardown: buckets %v, want %s and its files gone", st.Buckets, want["AttachmentsBucketName"])
	}
	for _, fn := range made[stack[1]].Functions {
		if slices.Contains(st.LogGroups, "/aws/lambda/"+fn) {
			t.Errorf("after teardown the log group of %s is left", fn)
		}
	}
	if !slices.ContainsFunc(st.Backups, func(b string) bool { return strings.HasPrefix(b, want["TableName"]+"/"+stack[1]+"-") }) {
		t.Errorf("backups %v, want one of %s named after the stack", st.Backups, want["TableName"])
	}

	// A stack with a trusted host: the artifacts block writes, then reads.
	// (Its URL variable is set as the outputs block, checked above, sets it.)
	if err := os.Remove(curlLog); err != nil {
		t.Fatal(err)
	}
	run("stack with a trusted host", setupBlock, "STACK="+hostStack+"\nARTIFACTS_URL="+made[hostStack].Outputs["ArtifactsFunctionUrl"],
		runBlock(t, blocks, "artifacts"))
	calls = readLines(t, curlLog)
	artifacts := "[" + made[hostStack].Outputs["ArtifactsFunctionUrl"] + "sessions/curl-first/turns/t1/artifacts]"
	if len(calls) != 2 || !strings.Contains(calls[0], "[-X] [PUT] "+artifacts) || !strings.Contains(calls[0], "[aws:amz:"+region[1]+":lambda]") ||
		strings.Contains(calls[1], "[PUT]") || !strings.Contains(calls[1], artifacts) {
		t.Errorf("curl calls %q, want the signed PUT of the artifacts, then the GET", calls)
	}
}

// awsEnv is the environment of the AWS CLI and boto3 against the stand-in
// at endpoint: this process's environment without its AWS settings (no
// profile or credentials of the person running the tests), placeholder
// credentials, and configuration files that do not exist.
func awsEnv(endpoint, dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env, "AWS_ENDPOINT_URL="+endpoint, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_CONFIG_FILE="+filepath.Join(dir, "aws-config"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "aws-credentials"),
		"AWS_PAGER=")
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
