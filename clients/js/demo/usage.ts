// The demo page's usage line: what is left of the user's quotas, shown
// only when little (a fifth or less) or nothing is left. It reads GET
// /history/usage?period=day (docs/quotas.md) and says nothing when no
// quota applies, when the server keeps no ledger (404), or when the read
// fails: the line is a hint, the server enforces the quotas.

/** One limit of the usage report (LimitStatus in pkg/sessionapi). */
interface Limit {
  scope: string;
  name: string;
  limit: number;
  used?: number;
  remaining?: number;
  resetsAt?: string;
}

const NEAR = 0.2;

/**
 * usageLine shows, in el, the quotas near or at their limit, and returns
 * the function that reads the report again (after each turn, and after a
 * QUOTA_EXCEEDED). When a shown limit resets, it reads again by itself.
 */
export function usageLine(el: HTMLElement, historyURL: string, headers: () => Promise<Record<string, string>>): () => Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let seq = 0;
  const refresh = async (): Promise<void> => {
    const mine = ++seq;
    let limits: Limit[] = [];
    try {
      const res = await fetch(new URL("usage?period=day", new URL(historyURL, location.href)), { headers: await headers(), cache: "no-store" });
      if (res.ok) {
        const body = await res.json();
        if (Array.isArray(body?.limits)) limits = body.limits.filter(valid);
      }
    } catch {
      /* no line then */
    }
    if (mine !== seq) return; // a later read answers
    const now = Date.now();
    const shown = limits.filter((l) => l.remaining! <= l.limit * NEAR);
    el.replaceChildren(...shown.map((l) => item(l, now)));
    el.hidden = shown.length === 0;
    el.dataset.state = shown.some((l) => l.remaining === 0) ? "at" : shown.length ? "near" : "none";
    clearTimeout(timer);
    const next = Math.min(...shown.map((l) => (l.resetsAt ? Date.parse(l.resetsAt) - now : Infinity)));
    if (Number.isFinite(next)) timer = setTimeout(() => void refresh(), Math.max(next, 0) + 500);
  };
  return refresh;
}

function valid(l: unknown): l is Limit {
  const v = l as Limit;
  return typeof v?.name === "string" && Number.isSafeInteger(v.limit) && Number.isSafeInteger(v.remaining) && Number.isSafeInteger(v.used);
}

const UNIT: Record<string, [string, string]> = {
  turnsPerMinute: ["turns", "this minute"],
  tokensPerDay: ["tokens", "today"],
  tokensPerMonth: ["tokens", "this month"],
  concurrentSessions: ["conversations answering at once", ""],
};

function item(l: Limit, now: number): HTMLElement {
  const [unit, when] = UNIT[l.name] ?? ["", ""];
  const whose = l.scope === "tenant" ? "your team's " : "";
  const n = (x: number) => x.toLocaleString("en-US");
  let s = `${n(l.remaining!)} of ${whose}${n(l.limit)} ${unit} left ${when}`.trim();
  if (l.remaining === 0) s = `No ${whose}${unit} left ${when}`.trim();
  if (l.remaining === 0 && l.resetsAt) s += ` · more ${inWords(Date.parse(l.resetsAt) - now)}`;
  const el = document.createElement("span");
  el.className = "limit";
  el.dataset.limit = `${l.scope}.${l.name}`;
  el.textContent = s;
  return el;
}

function inWords(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 120) return `in ${s} s`;
  if (s < 7200) return `in ${Math.ceil(s / 60)} min`;
  return `in ${Math.ceil(s / 3600)} h`;
}
