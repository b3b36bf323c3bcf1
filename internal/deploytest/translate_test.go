package deploytest_test

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSAMTranslation runs AWS's SAM translator (aws-sam-translator, the
// transform CloudFormation applies to template.yaml) under every parameter
// set, evaluates the CloudFormation it makes as CloudFormation would, and
// checks what AWS will create: each function URL's AuthType and
// InvokeMode, the Lambda permissions (lambda:InvokeFunctionUrl and
// lambda:InvokeFunction through the URL, public in jwt mode only), each
// function's environment (the translator's merge of Globals, compared with
// TestTemplate's), its role's policies (the same checks as TestTemplate:
// the code's DynamoDB actions, the Bedrock and secret grants) and that
// cfn-lint finds nothing in the translated templates either. One python3
// process translates every set; one cfn-lint run lints the distinct
// results.
func TestSAMTranslation(t *testing.T) {
	t.Parallel()
	python := requireTool(t, "python3", "Python 3 with aws-sam-translator (pip install aws-sam-translator)")
	cfnLint := requireTool(t, "cfn-lint", "cfn-lint (pip install cfn-lint)")
	root := repoRoot(t)
	translated := translate(t, python, root)

	t.Run("cfn-lint", func(t *testing.T) {
		t.Parallel()
		lintTranslated(t, cfnLint, root, translated)
	})
	t.Run("deploy policy", func(t *testing.T) {
		t.Parallel()
		checkDeployPolicy(t, root, translated)
	})
	for name, params := range parameterSets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			js, err := json.Marshal(translated[name])
			if err != nil {
				t.Fatal(err)
			}
			cfn := evaluate(t, js, params)
			sam := load(t, params)
			jwt := params["AuthMode"] == "jwt" || params["ChatPage"] != nil
			bedrock := params["ModelProvider"] == "bedrock"
			resources := cfn["Resources"].(map[string]any)
			if got := typeCount(resources, "AWS::Lambda::Function"); got != len(functions) {
				t.Errorf("%d AWS::Lambda::Function, want %d", got, len(functions))
			}
			if got := typeCount(resources, "AWS::Lambda::Url"); got != len(functions) {
				t.Errorf("%d AWS::Lambda::Url, want %d", got, len(functions))
			}
			for fname, want := range functions {
				t.Run(fname, func(t *testing.T) {
					fn := resourceOf(t, resources, fname, "AWS::Lambda::Function")
					env := map[string]string{}
					if e, ok := fn["Environment"].(map[string]any); ok {
						for k, v := range e["Variables"].(map[string]any) {
							env[k] = fmt.Sprint(v)
						}
					}
					if wantEnv := sam.environment(fname); !maps.Equal(env, wantEnv) {
						t.Errorf("environment %v,\nwant (Globals merged with the function's) %v", env, wantEnv)
					}

					url := resourceOf(t, resources, fname+"Url", "AWS::Lambda::Url")
					wantAuth := "AWS_IAM"
					if jwt {
						wantAuth = "NONE"
					}
					if url["TargetFunctionArn"] != "Ref("+fname+")" || url["AuthType"] != wantAuth || url["InvokeMode"] != want.invokeMode {
						t.Errorf("URL TargetFunctionArn %v, AuthType %v, InvokeMode %v; want Ref(%s), %s, %s",
							url["TargetFunctionArn"], url["AuthType"], url["InvokeMode"], fname, wantAuth, want.invokeMode)
					}
					checkCORS(t, fname, url, params["AllowedOrigins"])
					checkTranslatedPermissions(t, resources, fname, jwt)

					if fn["Role"] != "GetAtt("+fname+"Role.Arn)" {
						t.Errorf("Role %v, want the generated %sRole", fn["Role"], fname)
					}
					role := resourceOf(t, resources, fname+"Role", "AWS::IAM::Role")
					// Logs, and X-Ray segments: SAM attaches AWSXrayWriteOnlyAccess
					// because Tracing is a parameter's value (template.yaml,
					// Globals), whatever that value.
					if got := fmt.Sprint(role["ManagedPolicyArns"]); got != "[arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess]" {
						t.Errorf("role ManagedPolicyArns %s, want only AWSLambdaBasicExecutionRole (logs) and AWSXrayWriteOnlyAccess (X-Ray segments)", got)
					}
					statements := roleStatements(t, role)
					checkTablePolicy(t, statements, want.actions)
					var modelID string
					if bedrock && fname == "TurnFunction" {
						modelID = fmt.Sprint(params["ModelId"])
					}
					checkBedrockPolicy(t, statements, modelID)
					mcpSecrets, _ := params["McpHeaderSecretArns"].(string)
					checkSecrets(t, fname, env, statements, openAIKeySecret(params), mcpSecrets)
				})
			}
		})
	}
}

// requireTool returns the path of the program name, or skips t with a
// loud reason naming what to install; under CI=true (.ci/run) it fails
// instead.
func requireTool(t *testing.T, name, what string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("*** %s not found: install %s; template.yaml was NOT checked with AWS's tools ***", name, what)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// codeURI stands in for the S3 location `sam deploy` uploads each
// function's code to.
const codeURI = "s3://turnstream-deploy-example/turnstream/0123456789abcdef"

// translate runs testdata/sam_translate.py once over every parameter set
// and returns the CloudFormation template of each, by set name.
func translate(t *testing.T, python, root string) map[string]map[string]any {
	t.Helper()
	req, err := json.Marshal(map[string]any{
		"template": filepath.Join(root, "template.yaml"), "region": "us-east-1", "codeUri": codeURI,
		"parameterSets": parameterSets,
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), python, filepath.Join("testdata", "sam_translate.py"))
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 { // a missing module
			msg := "*** " + strings.TrimSpace(stderr.String()) + "; template.yaml was NOT translated ***"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		t.Fatalf("sam_translate.py: %v\n%s", err, stderr.String())
	}
	var res struct {
		Version   string                    `json:"samtranslator"`
		Templates map[string]map[string]any `json:"templates"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("sam_translate.py output: %v", err)
	}
	t.Logf("aws-sam-translator %s translated %d parameter sets", res.Version, len(res.Templates))
	return res.Templates
}

// lintTranslated runs cfn-lint once over the distinct translated
// templates, from the repository root so that .cfnlintrc.yaml (the
// informational checks) applies: it must print nothing and exit 0.
func lintTranslated(t *testing.T, cfnLint, root string, translated map[string]map[string]any) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{} // content hash -> first set name
	for _, name := range slices.Sorted(maps.Keys(translated)) {
		js, err := json.MarshalIndent(translated[name], "", " ")
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(js)
		key := hex.EncodeToString(sum[:8])
		if _, seen := files[key]; seen {
			continue
		}
		files[key] = name
		if err := os.WriteFile(filepath.Join(dir, key+".json"), js, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--"}
	for _, key := range slices.Sorted(maps.Keys(files)) {
		args = append(args, filepath.Join(dir, key+".json"))
	}
	cmd := exec.CommandContext(t.Context(), cfnLint, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("cfn-lint on the translated templates (%v): %v\n%s", files, err, out)
	}
	t.Logf("cfn-lint: %d distinct translated templates of %d parameter sets, no findings", len(files), len(translated))
}

func typeCount(resources map[string]any, typ string) int {
	n := 0
	for _, r := range resources {
		if r.(map[string]any)["Type"] == typ {
			n++
		}
	}
	return n
}

// resourceOf returns the Properties of resource name, which must be of
// type typ.
func resourceOf(t *testing.T, resources map[string]any, name, typ string) map[string]any {
	t.Helper()
	r, ok := resources[name].(map[string]any)
	if !ok || r["Type"] != typ {
		t.Fatalf("no %s %s in the translated template", typ, name)
	}
	props, _ := r["Properties"].(map[string]any)
	return props
}

// checkTranslatedPermissions: in jwt mode (AuthType NONE) the function has
// exactly lambda:InvokeFunctionUrl for everyone with FunctionUrlAuthType
// NONE and lambda:InvokeFunction for everyone through the URL only
// (InvokedViaFunctionUrl); in iam mode no permission at all.
func checkTranslatedPermissions(t *testing.T, resources map[string]any, fname string, jwt bool) {
	t.Helper()
	var urlPerm, invokePerm int
	for name, r := range resources {
		res := r.(map[string]any)
		if res["Type"] != "AWS::Lambda::Permission" {
			continue
		}
		p := res["Properties"].(map[string]any)
		if p["FunctionName"] != "Ref("+fname+")" {
			continue
		}
		switch {
		case p["Action"] == "lambda:InvokeFunctionUrl" && p["Principal"] == "*" && p["FunctionUrlAuthType"] == "NONE" && len(p) == 4:
			urlPerm++
		case p["Action"] == "lambda:InvokeFunction" && p["Principal"] == "*" && p["InvokedViaFunctionUrl"] == true && len(p) == 4:
			invokePerm++
		default:
			t.Errorf("permission %s: %v", name, p)
		}
	}
	want := 0
	if jwt {
		want = 1
	}
	if urlPerm != want || invokePerm != want {
		t.Errorf("%d lambda:InvokeFunctionUrl and %d lambda:InvokeFunction (via the URL) public permissions, want %d of each",
			urlPerm, invokePerm, want)
	}
}

// roleStatements returns the statements of the inline policies of a
// translated role (SAM's Policies become the role's Policies).
func roleStatements(t *testing.T, role map[string]any) []statement {
	t.Helper()
	var out []statement
	policies, _ := role["Policies"].([]any)
	for _, p := range policies {
		doc := p.(map[string]any)["PolicyDocument"].(map[string]any)
		for _, raw := range doc["Statement"].([]any) {
			b, err := json.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			var s statement
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("policy statement %s: %v", b, err)
			}
			if s.Effect != "Allow" {
				t.Errorf("statement %s: Effect %s", b, s.Effect)
			}
			out = append(out, s)
		}
	}
	return out
}

// deployActions are the calls `sam deploy` and CloudFormation make with
// the deploying identity's credentials: always (the stack, its change
// sets, the SAM transform and SAM's upload bucket), and per resource type
// the stack creates (the create, update and delete of each type's
// CloudFormation handler). A type missing here fails the test, so that a
// new kind of resource comes with its permissions in
// docs/deploy-policy.json.
var deployActions = map[string][]string{
	"": {
		"cloudformation:CreateChangeSet", "cloudformation:DescribeChangeSet", "cloudformation:ExecuteChangeSet",
		"cloudformation:DescribeStacks", "cloudformation:DescribeStackEvents", "cloudformation:GetTemplateSummary",
		"cloudformation:DeleteStack", "cloudformation:DescribeStackResources",
		"s3:CreateBucket", "s3:PutObject", "s3:GetObject", "s3:PutBucketPolicy", "s3:PutBucketVersioning",
	},
	"AWS::Lambda::Function": {
		"lambda:CreateFunction", "lambda:GetFunction", "lambda:UpdateFunctionCode", "lambda:UpdateFunctionConfiguration",
		"lambda:DeleteFunction", "lambda:TagResource", "lambda:ListTags", "iam:PassRole",
	},
	"AWS::Lambda::Url": {
		"lambda:CreateFunctionUrlConfig", "lambda:GetFunctionUrlConfig", "lambda:UpdateFunctionUrlConfig", "lambda:DeleteFunctionUrlConfig",
	},
	"AWS::Lambda::Permission": {"lambda:AddPermission", "lambda:RemovePermission", "lambda:GetPolicy"},
	"AWS::IAM::Role": {
		"iam:CreateRole", "iam:GetRole", "iam:DeleteRole", "iam:TagRole", "iam:PutRolePolicy", "iam:GetRolePolicy",
		"iam:DeleteRolePolicy", "iam:AttachRolePolicy", "iam:DetachRolePolicy", "iam:UpdateAssumeRolePolicy",
	},
	// An inline policy of a role the stack made (the turn function's
	// self-invoke policy).
	"AWS::IAM::Policy": {"iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"},
	"AWS::DynamoDB::Table": {
		"dynamodb:CreateTable", "dynamodb:DescribeTable", "dynamodb:UpdateTable", "dynamodb:UpdateTimeToLive",
		"dynamodb:DescribeTimeToLive", "dynamodb:UpdateContinuousBackups", "dynamodb:DescribeContinuousBackups",
		"dynamodb:TagResource", "dynamodb:ListTagsOfResource",
	},
	// The attachments bucket and its TLS-only policy (docs/attachments.md).
	"AWS::S3::Bucket": {
		"s3:CreateBucket", "s3:DeleteBucket", "s3:ListBucket", "s3:GetBucketLocation", "s3:PutEncryptionConfiguration",
		"s3:GetEncryptionConfiguration", "s3:PutBucketPublicAccessBlock", "s3:GetBucketPublicAccessBlock",
		"s3:PutBucketOwnershipControls", "s3:GetBucketOwnershipControls", "s3:PutLifecycleConfiguration",
		"s3:GetLifecycleConfiguration", "s3:PutBucketCORS", "s3:GetBucketCORS", "s3:PutBucketTagging", "s3:GetBucketTagging",
	},
	"AWS::S3::BucketPolicy": {"s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy"},
	"AWS::SecretsManager::Secret": {
		"secretsmanager:CreateSecret", "secretsmanager:DescribeSecret", "secretsmanager:UpdateSecret",
		"secretsmanager:DeleteSecret", "secretsmanager:GetRandomPassword", "secretsmanager:TagResource",
	},
	// The alarms and the dashboard (docs/operations.md; parameter Alarms).
	"AWS::CloudWatch::Alarm": {
		"cloudwatch:PutMetricAlarm", "cloudwatch:DescribeAlarms", "cloudwatch:DeleteAlarms",
		"cloudwatch:TagResource", "cloudwatch:UntagResource", "cloudwatch:ListTagsForResource",
	},
	// The chat page (docs/chat-page.md; parameter ChatPage).
	"AWS::CloudFront::Function": {
		"cloudfront:CreateFunction", "cloudfront:DescribeFunction", "cloudfront:GetFunction", "cloudfront:PublishFunction",
		"cloudfront:UpdateFunction", "cloudfront:DeleteFunction",
	},
	"AWS::CloudFront::Distribution": {
		"cloudfront:CreateDistribution", "cloudfront:GetDistribution", "cloudfront:GetDistributionConfig",
		"cloudfront:UpdateDistribution", "cloudfront:DeleteDistribution", "cloudfront:TagResource", "cloudfront:ListTagsForResource",
	},
	"AWS::Cognito::UserPool": {
		"cognito-idp:CreateUserPool", "cognito-idp:DescribeUserPool", "cognito-idp:UpdateUserPool", "cognito-idp:DeleteUserPool",
		"cognito-idp:SetUserPoolMfaConfig", "cognito-idp:GetUserPoolMfaConfig", "cognito-idp:TagResource", "cognito-idp:ListTagsForResource",
	},
	"AWS::Cognito::UserPoolDomain": {
		"cognito-idp:CreateUserPoolDomain", "cognito-idp:DescribeUserPoolDomain", "cognito-idp:UpdateUserPoolDomain", "cognito-idp:DeleteUserPoolDomain",
	},
	"AWS::Cognito::UserPoolClient": {
		"cognito-idp:CreateUserPoolClient", "cognito-idp:DescribeUserPoolClient", "cognito-idp:UpdateUserPoolClient", "cognito-idp:DeleteUserPoolClient",
	},
	"AWS::CloudWatch::Dashboard": {
		"cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards", "cloudwatch:ListDashboards",
	},
}

// checkDeployPolicy: docs/deploy-policy.json (README "Permissions of the
// deploying identity") allows every action of deployActions for the
// resource types the translated templates hold, and denies nothing.
func checkDeployPolicy(t *testing.T, root string, translated map[string]map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "deploy-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Version   string
		Statement []statement
	}
	if err := json.Unmarshal(raw, &policy); err != nil {
		t.Fatalf("docs/deploy-policy.json: %v", err)
	}
	var allowed []*regexp.Regexp
	for _, s := range policy.Statement {
		if s.Effect != "Allow" {
			t.Errorf("docs/deploy-policy.json statement %s: Effect %s, want Allow only", s.Sid, s.Effect)
		}
		for _, a := range s.Action {
			allowed = append(allowed, regexp.MustCompile(`(?i)^`+strings.ReplaceAll(regexp.QuoteMeta(a), `\*`, `.*`)+`$`))
		}
	}
	types := map[string]bool{"": true}
	for _, tpl := range translated {
		for _, r := range tpl["Resources"].(map[string]any) {
			types[fmt.Sprint(r.(map[string]any)["Type"])] = true
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		actions, known := deployActions[typ]
		if !known {
			t.Errorf("the stack creates %s: add its CloudFormation permissions to docs/deploy-policy.json and to deployActions", typ)
		}
		for _, a := range actions {
			if !slices.ContainsFunc(allowed, func(re *regexp.Regexp) bool { return re.MatchString(a) }) {
				t.Errorf("docs/deploy-policy.json does not allow %s (needed for %s)", a, cmp.Or(typ, "sam deploy"))
			}
		}
	}
}
