package awsenv_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/turnstream/turnstream/pkg/awsenv"
)

// clean unsets every variable awsenv reads, for the test's duration.
func clean(t *testing.T) {
	t.Helper()
	for _, name := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SECRETS_MANAGER", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT"} {
		t.Setenv(name, "")
		_ = os.Unsetenv(name)
	}
}

// TestRegion: the argument, else AWS_REGION, else AWS_DEFAULT_REGION.
func TestRegion(t *testing.T) {
	clean(t)
	t.Setenv("AWS_DEFAULT_REGION", "eu-west-3")
	for _, tc := range []struct{ arg, env, want string }{
		{"", "", "eu-west-3"},
		{"", "us-west-2", "us-west-2"},
		{"ap-south-1", "us-west-2", "ap-south-1"},
	} {
		t.Setenv("AWS_REGION", tc.env)
		cfg, err := awsenv.Config(tc.arg)
		if err != nil || cfg.Region != tc.want {
			t.Errorf("Config(%q) with AWS_REGION %q: region %q, %v; want %q", tc.arg, tc.env, cfg.Region, err, tc.want)
		}
	}
}

// TestKeys: the Lambda runtime's keys sign the calls; without keys or
// an endpoint the first call's credentials fail with ErrNoCredentials.
func TestKeys(t *testing.T) {
	clean(t)
	cfg, err := awsenv.Config("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Credentials.Retrieve(t.Context()); !errors.Is(err, awsenv.ErrNoCredentials) {
		t.Errorf("credentials without any: %v, want ErrNoCredentials", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDAWSENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "session")
	cfg, err = awsenv.Config("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil || c.AccessKeyID != "AKIDAWSENV" || c.SecretAccessKey != "secret" || c.SessionToken != "session" {
		t.Errorf("credentials = %+v, %v; want the environment's keys", c, err)
	}
}

// TestContainerEndpoint: without keys, a container credentials endpoint
// is asked with the authorization token (from the token file when set),
// and a full URI that is plain HTTP to another host is refused.
func TestContainerEndpoint(t *testing.T) {
	clean(t)
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		_ = json.NewEncoder(w).Encode(map[string]string{"AccessKeyId": "AKIDCONTAINER", "SecretAccessKey": "s", "Token": "tok",
			"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	}))
	defer srv.Close()
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/creds")
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "from-env")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", file)
	p, err := awsenv.Credentials()
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Retrieve(t.Context())
	if err != nil || c.AccessKeyID != "AKIDCONTAINER" || auth != "from-file" {
		t.Errorf("credentials = %+v, %v, authorization %q; want the endpoint's, asked with the file's token", c, err, auth)
	}

	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://203.0.113.7/creds")
	if _, err := awsenv.Credentials(); err == nil {
		t.Error("a plain HTTP endpoint on another host was accepted")
	}
	if _, err := awsenv.Config("us-east-1"); err == nil {
		t.Error("Config accepted a plain HTTP endpoint on another host")
	}
}

// TestEndpoints: AWS_ENDPOINT_URL_<SERVICE> points one service's client
// elsewhere, AWS_ENDPOINT_URL every other one, as the SDK's clients
// resolve them (the endpoint a request is sent to).
func TestEndpoints(t *testing.T) {
	clean(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDAWSENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	hosts := make(chan string, 4)
	srv := func() *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hosts <- r.Host
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = w.Write([]byte(`{}`))
		}))
	}
	general, secrets := srv(), srv()
	defer general.Close()
	defer secrets.Close()
	t.Setenv("AWS_ENDPOINT_URL", general.URL)
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", secrets.URL)
	cfg, err := awsenv.Config("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	_, _ = dynamodb.NewFromConfig(cfg).ListTables(t.Context(), &dynamodb.ListTablesInput{})
	_, _ = secretsmanager.NewFromConfig(cfg).GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("s")})
	if got, want := <-hosts, general.Listener.Addr().String(); got != want {
		t.Errorf("DynamoDB call went to %s, want AWS_ENDPOINT_URL's %s", got, want)
	}
	if got, want := <-hosts, secrets.Listener.Addr().String(); got != want {
		t.Errorf("Secrets Manager call went to %s, want AWS_ENDPOINT_URL_SECRETS_MANAGER's %s", got, want)
	}
}

// TestFIPS: AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT reach
// the clients; a value that is not a boolean is an error.
func TestFIPS(t *testing.T) {
	clean(t)
	t.Setenv("AWS_USE_FIPS_ENDPOINT", "TRUE")
	t.Setenv("AWS_USE_DUALSTACK_ENDPOINT", "false")
	cfg, err := awsenv.Config("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	o := dynamodb.NewFromConfig(cfg).Options()
	if o.EndpointOptions.UseFIPSEndpoint != aws.FIPSEndpointStateEnabled || o.EndpointOptions.UseDualStackEndpoint != aws.DualStackEndpointStateDisabled {
		t.Errorf("endpoint options = %+v; want FIPS on, dual-stack off", o.EndpointOptions)
	}
	for _, name := range []string{"AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT"} {
		t.Setenv(name, "yes")
		if _, err := awsenv.Config("us-east-1"); err == nil {
			t.Errorf("%s=yes was accepted", name)
		}
		t.Setenv(name, "")
	}
}
