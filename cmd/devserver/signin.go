package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/turnstream/turnstream/internal/testidp"
	"github.com/turnstream/turnstream/pkg/config"
)

// LocalClientID is the chat page's client id at the local issuer, and so
// the audience the functions require of its tokens (as with an Amazon
// Cognito app client, whose access tokens carry it as client_id).
const LocalClientID = "turnstream-chat-page"

// localIssuer is -signin local's OpenID Connect issuer (internal/testidp)
// on a loopback port of its own.
type localIssuer struct {
	provider *testidp.Provider
	srv      *http.Server
}

// startLocalIssuer starts the issuer for a page served at page (the dev
// server's listening address) and points cfg at it: the functions read
// its tokens (AUTH_MODE jwt, its key set, issuer and client id as the
// audience) and the page signs in through it. Its tokens last ttl.
func startLocalIssuer(page net.Addr, ttl time.Duration, cfg *config.Config) (*localIssuer, error) {
	if cfg.Auth.Mode == config.AuthIAM {
		return nil, errors.New("AUTH_MODE iam: the page cannot sign in to it")
	}
	tcp, ok := page.(*net.TCPAddr)
	if !ok {
		return nil, errors.New("the dev server's address is not TCP")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(tcp.IP.String(), "0"))
	if err != nil {
		return nil, err
	}
	origins := []string{"http://" + page.String()}
	if tcp.IP.IsLoopback() {
		origins = append(origins, "http://"+net.JoinHostPort("localhost", strconv.Itoa(tcp.Port)))
	}
	p, err := testidp.NewProvider("http://"+ln.Addr().String(), testidp.ProviderOptions{
		ClientID: LocalClientID, RedirectOrigins: origins, AccessTTL: ttl,
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: headerTimeout}
	go func() { _ = srv.Serve(ln) }()

	cfg.Auth.Mode = config.AuthJWT
	cfg.Auth.JWKSURL = p.JWKSURL()
	cfg.Auth.Issuer = p.Issuer()
	cfg.Auth.Audience = LocalClientID
	cfg.Auth.AudienceSecret = ""
	if cfg.Auth.TenantClaim == "" {
		cfg.Auth.TenantClaim = "iss"
	}
	cfg.Page.Authority = p.Issuer()
	cfg.Page.ClientID = LocalClientID
	cfg.Page.LogoutURL = ""
	cfg.Page.ConnectOrigins = nil
	return &localIssuer{provider: p, srv: srv}, nil
}

// close stops the issuer.
func (l *localIssuer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
}
