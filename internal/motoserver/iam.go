package motoserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Region is the region the helpers sign moto's IAM requests for.
const Region = "us-east-1"

// users numbers BucketUser's users.
var users atomic.Int64

// BucketUser creates a user in moto's IAM allowed actions on bucket (the
// object actions on its attachments/ keys, s3:ListBucket on the bucket
// itself, as template.yaml grants them) and returns its access key. Call
// it before Authenticate.
func BucketUser(tb testing.TB, endpoint, bucket string, actions []string) (keyID, secret string) {
	tb.Helper()
	name := fmt.Sprintf("user-%d", users.Add(1))
	var object, list []string
	for _, a := range actions {
		if a == "s3:ListBucket" {
			list = append(list, a)
		} else {
			object = append(object, a)
		}
	}
	type statement struct {
		Effect   string
		Action   []string
		Resource string
	}
	var statements []statement
	if len(object) > 0 {
		statements = append(statements, statement{"Allow", object, "arn:aws:s3:::" + bucket + "/attachments/*"})
	}
	if len(list) > 0 {
		statements = append(statements, statement{"Allow", list, "arn:aws:s3:::" + bucket})
	}
	policy, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": statements})
	if err != nil {
		tb.Fatal(err)
	}
	iam(tb, endpoint, url.Values{"Action": {"CreateUser"}, "UserName": {name}})
	iam(tb, endpoint, url.Values{"Action": {"PutUserPolicy"}, "UserName": {name}, "PolicyName": {"bucket"}, "PolicyDocument": {string(policy)}})
	out := iam(tb, endpoint, url.Values{"Action": {"CreateAccessKey"}, "UserName": {name}})
	id := regexp.MustCompile(`<AccessKeyId>([^<]+)</AccessKeyId>`).FindStringSubmatch(out)
	sec := regexp.MustCompile(`<SecretAccessKey>([^<]+)</SecretAccessKey>`).FindStringSubmatch(out)
	if id == nil || sec == nil {
		tb.Fatalf("CreateAccessKey: %s", out)
	}
	return id[1], sec[1]
}

// Authenticate has moto authenticate and authorize every request from
// now on (its /moto-api/reset-auth): it recomputes each Signature Version
// 4 signature with the secret of the access key its IAM issued, and
// refuses (403) a request the key's policies do not allow.
func Authenticate(tb testing.TB, endpoint string) {
	tb.Helper()
	// The body is the count of requests let through unchecked.
	resp, err := http.Post(endpoint+"/moto-api/reset-auth", "text/plain", strings.NewReader("0"))
	if err != nil {
		tb.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("reset-auth: %d", resp.StatusCode)
	}
}

// iam sends one IAM Query API action to moto, signed with placeholder
// credentials (moto routes a request by its signature's service).
func iam(tb testing.TB, endpoint string, form url.Values) string {
	tb.Helper()
	form.Set("Version", "2010-05-08")
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: "testing", SecretAccessKey: "testing-secret"}
	if err := v4.NewSigner().SignHTTP(tb.Context(), creds, req, hex.EncodeToString(sum[:]), "iam", Region, time.Now()); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("IAM %s: %d %s", form.Get("Action"), resp.StatusCode, out)
	}
	return string(out)
}
