package attach

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrPolicy is what VerifyPost returns for a form S3 would refuse: a
// missing field, a bad signature, an expired policy, or a field or file
// the policy does not allow. Its wrapped text says which, for logs and
// tests; the upload handler answers 403 without it.
var ErrPolicy = errors.New("attach: upload refused by its policy")

// Secrets looks up the secret access key of an access key id.
type Secrets func(accessKeyID string) (secret string, ok bool)

// VerifyPost checks a browser-based POST upload as Amazon S3 does
// (Signature Version 4, "Creating a POST policy"): fields are the form's
// fields other than the file (names as sent; S3 compares them without
// regard to case), bucket the bucket the form was posted to, size the
// file's length in bytes. It checks the algorithm and credential scope,
// the signature of the base64 policy with the credential's secret, the
// policy's expiration against now, and that every condition holds
// (exact matches, "eq", "starts-with", "content-length-range") and names
// every form field but policy, x-amz-signature and x-ignore-* ones. Any
// failure wraps ErrPolicy.
func VerifyPost(fields map[string]string, bucket string, size int64, secrets Secrets, now time.Time) error {
	f := make(map[string]string, len(fields))
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrPolicy, fmt.Sprintf(format, args...))
	}
	for k, v := range fields {
		if _, dup := f[strings.ToLower(k)]; dup {
			return refuse("field %s twice", strings.ToLower(k))
		}
		f[strings.ToLower(k)] = v
	}
	for _, name := range []string{"policy", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature", "key"} {
		if f[name] == "" {
			return refuse("no %s field", name)
		}
	}
	if f["x-amz-algorithm"] != "AWS4-HMAC-SHA256" {
		return refuse("algorithm")
	}
	scope := strings.Split(f["x-amz-credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || scope[3] != "s3" || !strings.HasPrefix(f["x-amz-date"], scope[1]) {
		return refuse("credential scope")
	}
	secret, ok := secrets(scope[0])
	if !ok {
		return refuse("unknown access key")
	}
	key := []byte("AWS4" + secret)
	for _, part := range scope[1:] {
		key = HMACSHA256(key, part)
	}
	want := hex.EncodeToString(HMACSHA256(key, f["policy"]))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(f["x-amz-signature"]))) {
		return refuse("signature")
	}

	// The policy is signed: what is decoded below was written by whoever
	// holds the secret, the presigner.
	raw, err := base64.StdEncoding.DecodeString(f["policy"])
	if err != nil {
		return refuse("policy encoding")
	}
	var doc struct {
		Expiration string `json:"expiration"`
		Conditions []any  `json:"conditions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return refuse("policy document")
	}
	exp, err := time.Parse(time.RFC3339, doc.Expiration)
	if err != nil || !now.Before(exp) {
		return refuse("policy expired")
	}
	named := map[string]bool{}
	value := func(name string) string {
		if name == "bucket" {
			return bucket
		}
		return f[name]
	}
	for _, c := range doc.Conditions {
		switch c := c.(type) {
		case map[string]any:
			for k, v := range c {
				s, ok := v.(string)
				name := strings.ToLower(strings.TrimPrefix(k, "$"))
				if !ok || value(name) != s {
					return refuse("condition on %s", name)
				}
				named[name] = true
			}
		case []any:
			if len(c) != 3 {
				return refuse("condition shape")
			}
			op, _ := c[0].(string)
			if strings.EqualFold(op, "content-length-range") {
				lo, ok1 := c[1].(float64)
				hi, ok2 := c[2].(float64)
				if !ok1 || !ok2 || float64(size) < lo || float64(size) > hi {
					return refuse("content-length-range")
				}
				continue
			}
			field, _ := c[1].(string)
			want, ok := c[2].(string)
			if !ok || !strings.HasPrefix(field, "$") {
				return refuse("condition shape")
			}
			name := strings.ToLower(field[1:])
			switch strings.ToLower(op) {
			case "eq":
				if value(name) != want {
					return refuse("condition on %s", name)
				}
			case "starts-with":
				if !strings.HasPrefix(value(name), want) {
					return refuse("condition on %s", name)
				}
			default:
				return refuse("condition operator")
			}
			named[name] = true
		default:
			return refuse("condition shape")
		}
	}
	for name := range f {
		switch {
		case name == "policy", name == "x-amz-signature", name == "file", strings.HasPrefix(name, "x-ignore-"):
		case !named[name]:
			return refuse("field %s not in the policy", name)
		}
	}
	return nil
}

// HMACSHA256 is the HMAC-SHA256 of data under key, the primitive of
// Signature Version 4.
func HMACSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}
