// Package auth establishes who is calling a turnstream function, from request
// headers and the request context only, before any body byte is read
// (docs/design.md#the-turn-pipeline,
// docs/design.md#authentication-and-tenancy).
//
// New builds the Authenticator of a Config mode:
//
//   - dev: "Authorization: Bearer dev.<subject>" names the principal; no
//     Authorization header means subject "local". Tenant is "dev". For
//     local runs only: New refuses the mode when AWS_LAMBDA_FUNCTION_NAME
//     is set.
//   - jwt: a bearer JWT signed with an asymmetric algorithm, verified
//     against a cached JSON Web Key Set, the issuer, the audience and the
//     clock (with skew), using github.com/lestrrat-go/jwx/v3. Subject is
//     the "sub" claim; Tenant is the configured claim (default "iss"). A
//     protected header with "crit", and claims that are not one JSON
//     object with unique names and numeric exp, nbf and iat, are refused
//     (docs/security.md).
//   - iam: a function URL with AuthType AWS_IAM. Lambda has already
//     verified the SigV4 signature; the caller is read from the raw event
//     in the request context (lambdaurl.RequestFromContext for the
//     streaming turn function, the aws-lambda-go-api-proxy v2 context for
//     the buffered ones). Subject is the caller's ARN, Tenant its account
//     id. Headers are never trusted for identity in this mode.
//
// In every mode a principal is Trusted (may write artifact references of
// sessions of its own tenant) exactly when its Tenant and Subject both
// equal Config.TrustedPrincipal's: trust is bound to the whole
// principal, so the trusted subject of one tenant is an ordinary
// principal in another (docs/security.md). Authenticate returns errors
// wrapping ErrUnauthenticated (HTTP 401), a jwt-mode token without a usable
// tenant claim included (RFC 6750 §3.1 invalid_token); the wrapped text is
// for logs and never contains the credential.
package auth
