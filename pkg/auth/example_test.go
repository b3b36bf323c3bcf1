package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
)

func ExampleNew() {
	a, err := auth.New(context.Background(),
		config.AuthConfig{Mode: config.AuthDev, TrustedSubject: "host"},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }), // not on Lambda
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, authorization := range []string{"", auth.DevAuthorization("alice"), auth.DevAuthorization("host"), "Bearer alice"} {
		r := httptest.NewRequest("POST", "/", nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		p, err := a.Authenticate(r)
		if errors.Is(err, auth.ErrUnauthenticated) {
			fmt.Println("401")
			continue
		}
		fmt.Printf("%+v\n", p)
	}
	// Output:
	// {Subject:local Tenant:dev Trusted:false}
	// {Subject:alice Tenant:dev Trusted:false}
	// {Subject:host Tenant:dev Trusted:true}
	// 401
}
