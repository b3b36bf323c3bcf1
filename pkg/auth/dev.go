package auth

import (
	"net/http"
	"strings"

	"github.com/turnstream/turnstream/pkg/chat"
)

// devAuthenticator implements dev mode
// (docs/design.md#authentication-and-tenancy, docs/design.md#running-it).
type devAuthenticator struct {
	trusted trust
}

func (a devAuthenticator) Authenticate(r *http.Request) (chat.Principal, error) {
	tok, present, err := bearer(r)
	if err != nil {
		return chat.Principal{}, err
	}
	subject := DevDefaultSubject
	if present {
		s, ok := strings.CutPrefix(tok, DevTokenPrefix)
		if !ok {
			return chat.Principal{}, unauthenticated("dev token does not start with \"dev.\"")
		}
		if !validDevSubject(s) {
			return chat.Principal{}, unauthenticated("dev subject is not 1..128 of [A-Za-z0-9._:-]")
		}
		subject = s
	}
	return chat.Principal{Subject: subject, Tenant: DevTenant, Trusted: a.trusted.of(DevTenant, subject)}, nil
}

// validDevSubject reports whether s is 1..128 of [A-Za-z0-9._:-].
func validDevSubject(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
