// Who the page acts for. The server that serves the page says how people
// sign in, at /config.json (internal/demo): "dev" on the dev server, where
// ?user=<subject> names the subject ("Authorization: Bearer dev.<subject>",
// no parameter: subject "local"), or "oidc" where the functions read JSON
// Web Tokens: the page then signs in at an OpenID Connect issuer with the
// authorization-code flow and PKCE (signin.ts, loaded only then, so that a
// dev page does not carry the OIDC client).

import { isSafeId } from "../src/index.js";

/** Headers is what every request of the page sends: a fresh token each time. */
export type Headers = () => Promise<Record<string, string>>;

/** Identity is the signed-in person as the page needs them. */
export interface Identity {
  /** The subject: per-person keys in the tab's storage use it. */
  user: string;
  /** What the footer says about who is signed in. */
  label: string;
  /** The headers of every request to the functions. */
  headers: Headers;
  /** Signs out at the issuer (OIDC only): the page navigates away. */
  signOut?: () => Promise<void>;
}

/** Settings is GET /config.json (settings in internal/demo). */
export interface Settings {
  signIn: "dev" | "oidc";
  authority?: string;
  clientId?: string;
  scope?: string;
  logoutUrl?: string;
}

/**
 * identify reads the page's settings and signs in. For OIDC it may leave
 * the page for the issuer's sign-in, and then never resolves. It throws
 * an Error with a message fit to show when the settings cannot be read or
 * the issuer refused the sign-in.
 */
export async function identify(): Promise<Identity> {
  let s: Settings = { signIn: "dev" };
  try {
    const res = await fetch("/config.json", { cache: "no-store" });
    // A server without the file (an older dev server) means dev auth.
    if (res.ok) s = (await res.json()) as Settings;
    else if (res.status !== 404) throw new Error(`HTTP ${res.status}`);
  } catch {
    throw new Error("The page could not read how to sign in. Reload to try again.");
  }
  if (s.signIn === "oidc" && s.authority && s.clientId) {
    const { signIn } = await import("./signin.js");
    return signIn({ authority: s.authority, clientId: s.clientId, scope: s.scope ?? "openid email", logoutUrl: s.logoutUrl });
  }
  const user = new URLSearchParams(location.search).get("user") ?? "";
  const safe = isSafeId(user);
  const headers: Record<string, string> = safe ? { Authorization: `Bearer dev.${user}` } : {};
  return { user: safe ? user : "local", label: `signed in as ${safe ? user : "local"} (dev auth)`, headers: async () => headers };
}
