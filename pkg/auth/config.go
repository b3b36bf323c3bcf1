package auth

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Authentication modes of Config.Mode (AUTH_MODE;
// docs/design.md#authentication-and-tenancy).
const (
	// ModeDev names the principal from "Authorization: Bearer
	// dev.<subject>"; local only (New refuses it on Lambda).
	ModeDev = "dev"
	// ModeJWT verifies a bearer JWT against a JWKS URL, issuer and
	// audience.
	ModeJWT = "jwt"
	// ModeIAM takes the caller from a function URL with AuthType AWS_IAM.
	ModeIAM = "iam"
)

// Config configures New (docs/design.md#authentication-and-tenancy).
// pkg/config builds it from the environment variables named at each field.
type Config struct {
	// Mode is ModeDev, ModeJWT or ModeIAM (AUTH_MODE, default "dev").
	Mode string
	// JWKSURL is the JSON Web Key Set URL (JWT_JWKS_URL); required in jwt
	// mode; https, or http only for a loopback host (local tests).
	JWKSURL string
	// Issuer is the required "iss" claim (JWT_ISSUER); required in jwt mode.
	Issuer string
	// Audience is the value a token's "aud" must hold or, in a token
	// without "aud", its "client_id" must be (Amazon Cognito's access
	// tokens) (JWT_AUDIENCE); required in jwt mode.
	Audience string
	// AudienceSecret names the AWS Secrets Manager secret (name or ARN)
	// whose string is the audience (JWT_AUDIENCE_SECRET), for a function
	// that cannot be given it directly: the stack's Amazon Cognito app
	// client, whose id depends on the page's address, which depends on the
	// functions (docs/chat-page.md). The function reads it at start and
	// sets Audience; set JWT_AUDIENCE or this, not both.
	AudienceSecret string
	// ClockSkew is the tolerance for exp, nbf and iat (JWT_CLOCK_SKEW,
	// default 60 s, 0..5 min).
	ClockSkew time.Duration
	// TenantClaim names the string claim that becomes the principal's
	// tenant in jwt mode (JWT_TENANT_CLAIM, default "iss").
	TenantClaim string
	// TrustedSubject is the subject of the trusted host principal that may
	// write artifact references (ARTIFACTS_TRUSTED_SUBJECT; default "host" in
	// dev mode, none otherwise; docs/design.md#history-and-artifacts-api,
	// docs/design.md#authentication-and-tenancy). Trust is bound to the whole
	// principal, TrustedSubject and TrustedTenant: see TrustedPrincipal.
	TrustedSubject string
	// TrustedTenant is the tenant of the trusted host principal
	// (ARTIFACTS_TRUSTED_TENANT). Empty means the one tenant the mode
	// allows for TrustedSubject where there is one (see TrustedPrincipal);
	// in jwt mode with a JWT_TENANT_CLAIM other than iss it is required.
	TrustedTenant string
}

// TrustedPrincipal returns the tenant and subject of the trusted host
// principal, the only principal that may write artifact references, and
// only those of sessions of its own tenant (a trusted writer never crosses
// tenants). A principal is trusted when both its Subject and its Tenant
// equal these. ok is false when none is configured (TrustedSubject empty).
// The tenant is TrustedTenant, or when that is empty:
//
//   - dev mode: DevTenant (every dev principal has it);
//   - iam mode: the account id of the ARN in TrustedSubject (an IAM
//     principal's tenant is its account, which its ARN names);
//   - jwt mode with JWT_TENANT_CLAIM iss (the default): Issuer (the only
//     issuer accepted, hence every principal's tenant);
//   - jwt mode with another tenant claim: none; this is an error, since a
//     subject alone would be trusted in every tenant.
//
// The error names the variable to fix: ARTIFACTS_TRUSTED_TENANT when it
// is missing, set without a subject, or set to a tenant no principal of
// the mode can have; ARTIFACTS_TRUSTED_SUBJECT when in iam mode it is not
// an ARN with an account id.
func (a Config) TrustedPrincipal() (tenant, subject string, ok bool, err error) {
	if a.TrustedSubject == "" {
		if a.TrustedTenant != "" {
			return "", "", false, errors.New("ARTIFACTS_TRUSTED_TENANT: set without ARTIFACTS_TRUSTED_SUBJECT")
		}
		return "", "", false, nil
	}
	var implied string // the only tenant the mode allows, "" when many
	switch a.Mode {
	case ModeDev:
		implied = DevTenant
	case ModeIAM:
		account, found := arnAccount(a.TrustedSubject)
		if !found {
			return "", "", false, errors.New("ARTIFACTS_TRUSTED_SUBJECT: in iam mode, want the trusted writer's IAM ARN (arn:<partition>:<service>::<account id>:<resource>)")
		}
		implied = account
	case ModeJWT:
		if a.TenantClaim == "" || a.TenantClaim == "iss" {
			if a.Issuer == "" {
				return "", "", false, nil // JWT_ISSUER is reported missing
			}
			implied = a.Issuer
		}
	default:
		return "", "", false, nil // AUTH_MODE is reported invalid
	}
	switch {
	case a.TrustedTenant == "" && implied == "":
		return "", "", false, errors.New("ARTIFACTS_TRUSTED_TENANT: required when ARTIFACTS_TRUSTED_SUBJECT is set and JWT_TENANT_CLAIM is not iss (the trusted principal is a tenant and a subject)")
	case a.TrustedTenant == "":
		return implied, a.TrustedSubject, true, nil
	case implied != "" && a.TrustedTenant != implied:
		return "", "", false, fmt.Errorf("ARTIFACTS_TRUSTED_TENANT: no %s-mode principal with subject ARTIFACTS_TRUSTED_SUBJECT has this tenant; leave it empty", a.Mode)
	}
	return a.TrustedTenant, a.TrustedSubject, true, nil
}

// arnAccount returns the account id field of an ARN
// (arn:partition:service:region:account-id:resource), which must be 12
// digits.
func arnAccount(arn string) (string, bool) {
	f := strings.SplitN(arn, ":", 6)
	if len(f) != 6 || f[0] != "arn" || f[1] == "" || f[2] == "" || f[5] == "" || len(f[4]) != 12 {
		return "", false
	}
	for _, c := range f[4] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return f[4], true
}
