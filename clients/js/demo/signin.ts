// The page's OpenID Connect sign-in, loaded by identity.ts only when the
// server says the page signs in that way. oidc-client-ts (Apache-2.0)
// does the protocol: the authorization-code flow with PKCE, the token
// exchange, refresh with the refresh token before the access token
// expires, and sign-out at the issuer. Tokens stay in this tab's
// sessionStorage; the access token goes to the functions as a Bearer
// token (Amazon Cognito's carries the app client's id as client_id, which
// the functions check as its audience).
import { UserManager, WebStorageStateStore, type User } from "oidc-client-ts";

import type { Identity } from "./identity.js";

/** OidcSettings is the issuer the server names (Settings in identity.ts). */
export interface OidcSettings {
  authority: string;
  clientId: string;
  scope: string;
  /** Sign-out address of an issuer whose discovery has none (Cognito's /logout). */
  logoutUrl?: string | undefined;
}

/** Issuer errors a person can act on, in plain words; others are named by code. */
const REFUSED: Record<string, string> = {
  access_denied: "The sign-in was cancelled or refused.",
  login_required: "Please sign in.",
};

/**
 * signIn returns the signed-in identity: from this tab's stored sign-in
 * (refreshed when its access token expired), from the issuer's answer in
 * the URL (which it then removes), or, failing both, by going to the
 * issuer, in which case it never resolves. It throws an Error fit to show
 * when the issuer answered with an error or its answer does not verify.
 */
export async function signIn(s: OidcSettings): Promise<Identity> {
  const home = `${location.origin}/`;
  const manager = new UserManager({
    authority: s.authority,
    client_id: s.clientId,
    redirect_uri: home,
    post_logout_redirect_uri: home,
    response_type: "code",
    scope: s.scope,
    automaticSilentRenew: true,
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    ...(s.logoutUrl ? { metadataSeed: { end_session_endpoint: s.logoutUrl } } : {}),
  });
  // Sign-out forgets the stored sign-in before it leaves for the issuer; a
  // request the page makes meanwhile must wait for that navigation, not
  // start a sign-in, whose navigation would cancel the sign-out's.
  let signingOut = false;
  const leave = async (): Promise<never> => {
    // Back to this very conversation once signed in.
    if (!signingOut) await manager.signinRedirect({ state: location.pathname + location.search });
    return new Promise<never>(() => {});
  };

  const q = new URLSearchParams(location.search);
  let user: User | null = null;
  if (q.has("state") && (q.has("code") || q.has("error"))) {
    const code = q.get("error");
    try {
      user = await manager.signinRedirectCallback();
    } catch {
      history.replaceState(null, "", "/");
      throw new Error(code ? (REFUSED[code] ?? `The sign-in failed (${code.replace(/[^a-z_]/g, "")}).`) : "The sign-in's answer did not verify. Reload to sign in again.");
    }
    history.replaceState(null, "", typeof user.state === "string" && user.state.startsWith("/") ? user.state : "/");
  }
  user ??= await manager.getUser();
  if (!user || user.expired) user = await refreshed(manager);
  if (!user) return leave();

  const current = async (): Promise<User> => {
    const u = await manager.getUser();
    if (u && !u.expired) return u;
    return (await refreshed(manager)) ?? leave();
  };
  const name = user.profile.email ?? user.profile.preferred_username ?? user.profile.sub;
  return {
    user: user.profile.sub,
    label: `signed in as ${name}`,
    headers: async () => ({ Authorization: `Bearer ${(await current()).access_token}` }),
    signOut: async () => {
      signingOut = true;
      const u = await manager.getUser();
      await manager.signoutRedirect({
        ...(u?.id_token ? { id_token_hint: u.id_token } : {}),
        // Cognito's /logout wants these two; a standard issuer ignores them.
        ...(s.logoutUrl ? { extraQueryParams: { client_id: s.clientId, logout_uri: home } } : {}),
      });
    },
  };
}

/** refreshed renews the stored sign-in with its refresh token; null when it cannot. */
async function refreshed(manager: UserManager): Promise<User | null> {
  const stored = await manager.getUser();
  if (!stored?.refresh_token) return null;
  try {
    return await manager.signinSilent();
  } catch {
    await manager.removeUser();
    return null;
  }
}
