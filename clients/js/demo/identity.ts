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
  /**
   * Maps the attachments' storage URLs onto the page's origin (the
   * settings' uploadsPath), or undefined: used as they are.
   */
  storageURL?: (url: string) => string;
}

/** Settings is GET /config.json (settings in internal/demo). */
export interface Settings {
  signIn: "dev" | "oidc";
  authority?: string;
  clientId?: string;
  scope?: string;
  logoutUrl?: string;
  /**
   * Where the page's origin routes the attachments' storage ("/uploads/"
   * behind the stack's CloudFront distribution): the storage's absolute
   * URLs are sent there, path and query kept. Absent: used as they are.
   */
  uploadsPath?: string;
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
  const storageURL = s.uploadsPath ? onOrigin(s.uploadsPath) : undefined;
  if (s.signIn === "oidc" && s.authority && s.clientId) {
    const { signIn } = await import("./signin.js");
    return { ...(await signIn({ authority: s.authority, clientId: s.clientId, scope: s.scope ?? "openid email", logoutUrl: s.logoutUrl })), storageURL };
  }
  const user = new URLSearchParams(location.search).get("user") ?? "";
  const safe = isSafeId(user);
  const headers: Record<string, string> = safe ? { Authorization: `Bearer dev.${user}` } : {};
  return { user: safe ? user : "local", label: `signed in as ${safe ? user : "local"} (dev auth)`, headers: async () => headers, storageURL };
}

/**
 * onOrigin returns the mapping of a storage URL of another origin onto
 * path of the page's: "https://bucket.s3.region.amazonaws.com/attachments/k?X-Amz-..."
 * becomes path + "attachments/k?X-Amz-...". A URL of the page's own origin
 * is kept.
 */
export function onOrigin(path: string): (url: string) => string {
  const base = path.endsWith("/") ? path : `${path}/`;
  return (url) => {
    const u = new URL(url, location.href);
    return u.origin === location.origin ? url : `${base}${u.pathname.replace(/^\//, "")}${u.search}`;
  };
}
