package client

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// An Authenticator adds the caller's credentials to each request the
// client sends, after every other header is set: a bearer token (the jwt
// and dev auth modes) or an AWS Signature Version 4 (the iam mode, a
// function URL with AuthType AWS_IAM). See docs/security.md.
type Authenticator interface {
	Authenticate(req *http.Request) error
}

// Bearer is a bearer token: Authenticate sets "Authorization: Bearer
// <token>". On the dev server the token dev.<subject> names the caller.
type Bearer string

// Authenticate implements Authenticator.
func (t Bearer) Authenticate(req *http.Request) error {
	req.Header.Set("Authorization", "Bearer "+string(t))
	return nil
}

// SigV4Service is the signing name of Lambda function URLs: a request to
// an AuthType AWS_IAM URL is signed for service "lambda" in the URL's
// region.
const SigV4Service = "lambda"

// SigV4 signs requests with AWS Signature Version 4 for SigV4Service.
// Function URLs require the payload's SHA-256 in X-Amz-Content-Sha256
// (signed with the other headers) for requests with a body; it is set on
// every request. A body is read into memory to be hashed. Build it with
// NewSigV4.
type SigV4 struct {
	credentials aws.CredentialsProvider
	region      string
	signer      *v4.Signer
	// Now is the signing clock; time.Now by default (tests set it).
	Now func() time.Time
}

// NewSigV4 returns a signer for region with credentials, which are
// retrieved for every request (wrap them in aws.NewCredentialsCache, as
// aws-sdk-go-v2's configuration loader does, to refresh expiring ones
// only when needed).
func NewSigV4(credentials aws.CredentialsProvider, region string) *SigV4 {
	return &SigV4{credentials: credentials, region: region, signer: v4.NewSigner(), Now: time.Now}
}

// emptyPayloadHash is the SHA-256 of no bytes, hex encoded.
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Authenticate implements Authenticator: it hashes the body (left
// readable), sets X-Amz-Content-Sha256 and signs the request.
func (s *SigV4) Authenticate(req *http.Request) error {
	hash := emptyPayloadHash
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return fmt.Errorf("read the request body to sign it: %w", err)
		}
		sum := sha256.Sum256(body)
		hash = hex.EncodeToString(sum[:])
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	creds, err := s.credentials.Retrieve(req.Context())
	if err != nil {
		return fmt.Errorf("SigV4: AWS credentials: %w", err)
	}
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := s.signer.SignHTTP(req.Context(), creds, req, hash, SigV4Service, s.region, s.Now()); err != nil {
		return fmt.Errorf("SigV4: sign the request: %w", err)
	}
	return nil
}

// FunctionURLRegion returns the region of a Lambda function URL
// (https://<url-id>.lambda-url.<region>.on.aws/...), and false for any
// other URL: the region a SigV4 signature for it must name.
func FunctionURLRegion(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false
	}
	labels := strings.Split(strings.ToLower(u.Hostname()), ".")
	// <url-id> . lambda-url . <region> . on . aws
	if len(labels) != 5 || labels[1] != "lambda-url" || labels[3] != "on" || labels[4] != "aws" || labels[0] == "" || labels[2] == "" {
		return "", false
	}
	return labels[2], true
}
