// The chat page's conversation sidebar: the caller's sessions as GET
// /history/sessions lists them (most recently active first), searched by
// title, renamed in place and deleted after a confirmation; at phone
// width a drawer behind the header's menu button. Opening a conversation
// is a link (?session=<id>): the page loads it as it loads any.

import { HTTPError, TurnstreamError, type SessionListItem, type TurnstreamClient } from "../src/index.js";

const PAGE = 20;
// A search keeps what matches as it reads the list, so a page can come
// back empty with more behind it: one request of the reader follows at
// most this many pages looking for a match.
const SEARCH_PAGES = 5;
const DEBOUNCE_MS = 300;
const LAG_MS = 2000;
const UNTITLED = "New conversation";
const SVG = "http://www.w3.org/2000/svg";
const PENCIL = "M4 20h4L19 9l-4-4L4 16zM13 7l4 4";
const TRASH = "M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13M10 11v6M14 11v6";

/** The conversation this tab started that the server does not list yet. */
export interface Unlisted {
  id: string;
  /** A turn of it was taken: the server lists it once that turn ends. */
  sent: boolean;
}

export interface SidebarOptions {
  client: TurnstreamClient;
  /** The conversation the page shows. */
  current: string;
  unlisted: () => Unlisted | undefined;
  /** The server lists id now (it was unlisted). */
  listed: (id: string) => void;
  newChat: () => void;
  /** The page's address for conversation id. */
  href: (id: string) => string;
  announce: (s: string) => void;
  /** An error in plain words. */
  plain: (e: unknown) => string;
}

export interface Sidebar {
  /**
   * refresh reads the list again, as many conversations as it shows, now
   * and once more LAG_MS later (after a turn ends).
   */
  refresh: () => Promise<void>;
}

/** icon returns an inline SVG drawing path d, hidden from assistive technology. */
export function icon(d: string): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "ico");
  const p = document.createElementNS(SVG, "path");
  p.setAttribute("d", d);
  svg.append(p);
  return svg;
}

const rtf = new Intl.RelativeTimeFormat("en", { numeric: "auto", style: "short" });
const DAY = 86_400_000;

/**
 * ago says how long ago iso was, as a list shows it: "just now" within a
 * minute, minutes, then hours the same day, "yesterday" and days within a
 * week, a date beyond.
 */
export function ago(iso: string, now = new Date()): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  const s = (now.getTime() - t.getTime()) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return rtf.format(-Math.floor(s / 60), "minute");
  const midnight = (d: Date): number => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((midnight(now) - midnight(t)) / DAY);
  if (days <= 0) return rtf.format(-Math.floor(s / 3600), "hour");
  if (days < 7) return rtf.format(-days, "day");
  return t.toLocaleDateString("en", { day: "numeric", month: "short", year: t.getFullYear() === now.getFullYear() ? undefined : "numeric" });
}

export function sidebar(o: SidebarOptions): Sidebar {
  const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
  const list = $<HTMLUListElement>("conversations");
  const note = $("side-note");
  const more = $<HTMLButtonElement>("more-sessions");
  const search = $<HTMLInputElement>("search");
  const newChat = $<HTMLButtonElement>("new-chat");
  const menu = $<HTMLButtonElement>("menu");
  const chat = $("chat");
  const scrim = $("scrim");
  const dialog = $<HTMLDialogElement>("confirm");
  const confirmText = $("confirm-text");
  const confirmError = $("confirm-error");
  const confirmDelete = $<HTMLButtonElement>("confirm-delete");

  let items: SessionListItem[] = [];
  let cursor: string | null = null;
  let query = "";
  let failure: unknown;
  let loading = false;
  // Each read of the list counts; an answer to an older one is dropped.
  let reads = 0;
  // The conversation being renamed: the list is not redrawn under its
  // input (stale says a redraw waits).
  let editing: string | undefined;
  let stale = false;
  // Deleted here: a read of the index that lags the delete does not bring them back.
  const deleted = new Set<string>();

  const name = (s: { title: string | null }): string => s.title || UNTITLED;
  const focusIn = (id: string, act: string): void => list.querySelector<HTMLElement>(`li[data-id="${CSS.escape(id)}"] [data-act="${act}"]`)?.focus();

  // ---- Reading the list ----------------------------------------------------

  async function load(how: "first" | "more" | "refresh"): Promise<void> {
    const mine = ++reads;
    const q = query;
    let got = how === "more" ? items : [];
    let next = how === "more" ? cursor : null;
    // A refresh reads as many as are shown and one more (a conversation
    // listed since), so Load more's pages stay.
    const limit = how === "refresh" ? Math.min(100, Math.max(PAGE, items.length + 1)) : PAGE;
    loading = true;
    more.setAttribute("aria-disabled", "true");
    try {
      for (let pages = 0; pages < SEARCH_PAGES; pages++) {
        const page = await o.client.sessions({ limit, cursor: next ?? undefined, q: q || undefined });
        if (mine !== reads) return;
        const seen = new Set(got.map((s) => s.sessionId));
        const fresh = page.sessions.filter((s) => !seen.has(s.sessionId) && !deleted.has(s.sessionId));
        got = [...got, ...fresh];
        next = page.nextCursor;
        if (!q || fresh.length > 0 || next === null) break;
      }
      items = got;
      cursor = next;
      failure = undefined;
      const u = o.unlisted();
      if (u && items.some((s) => s.sessionId === u.id)) o.listed(u.id);
    } catch (e) {
      if (mine !== reads) return;
      failure = e;
    }
    loading = false;
    render();
  }

  // ---- Drawing it ----------------------------------------------------------

  function render(): void {
    if (editing) {
      stale = true;
      return;
    }
    stale = false;
    const active = document.activeElement instanceof HTMLElement && list.contains(document.activeElement) ? document.activeElement : undefined;
    const at = active?.closest<HTMLElement>("li")?.dataset.id;
    const act = active?.dataset.act;
    const rows: HTMLLIElement[] = [];
    const u = query ? undefined : o.unlisted();
    if (u && !items.some((s) => s.sessionId === u.id)) rows.push(row({ sessionId: u.id, title: null, createdAt: "", updatedAt: null, lastTurn: null }, u.sent ? "just now" : "not sent yet"));
    for (const s of items) rows.push(row(s));
    list.replaceChildren(...rows);
    if (at && act) focusIn(at, act);
    const n = items.length;
    note.textContent = failure
      ? `The list can't be read. ${o.plain(failure)}`
      : rows.length === 0
        ? query
          ? cursor === null
            ? "No conversation's title has those words."
            : "None found yet. Load more to search further."
          : "No conversations yet."
        : query
          ? `${n} found`
          : "";
    more.hidden = cursor === null && !failure;
    more.textContent = failure ? "Try again" : "Load more";
    more.removeAttribute("aria-disabled");
  }

  function row(s: SessionListItem, local?: string): HTMLLIElement {
    const li = document.createElement("li");
    li.className = "conv";
    li.dataset.id = s.sessionId;
    const a = document.createElement("a");
    a.href = o.href(s.sessionId);
    a.dataset.act = "open";
    const title = document.createElement("span");
    title.className = "title";
    title.textContent = name(s);
    const when = document.createElement(local === undefined ? "time" : "span") as HTMLTimeElement;
    when.className = "when";
    const iso = s.updatedAt ?? s.createdAt;
    if (local !== undefined) when.textContent = local;
    else if (iso) {
      when.dateTime = iso;
      when.textContent = ago(iso);
      when.title = new Date(iso).toLocaleString();
    }
    a.append(title, when);
    if (s.sessionId === o.current) a.setAttribute("aria-current", "page");
    li.append(a);
    if (local === undefined) {
      for (const [act, label, d] of [["rename", "Rename", PENCIL], ["delete", "Delete", TRASH]] as const) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "ghost icon";
        b.dataset.act = act;
        b.setAttribute("aria-label", `${label} “${name(s)}”`);
        b.title = label;
        b.append(icon(d));
        li.append(b);
      }
    }
    return li;
  }

  // The times say "5 min. ago": they are brought up to date every minute.
  setInterval(() => {
    for (const t of list.querySelectorAll<HTMLTimeElement>("time[datetime]")) t.textContent = ago(t.dateTime);
  }, 60_000);

  list.addEventListener("click", (ev) => {
    const el = (ev.target as HTMLElement).closest<HTMLElement>("[data-act]");
    const id = el?.closest<HTMLElement>("li")?.dataset.id;
    if (!el || !id) return;
    const s = items.find((x) => x.sessionId === id);
    switch (el.dataset.act) {
      case "open":
        if (ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return; // a new tab or window
        if (id === o.current) {
          ev.preventDefault(); // it is open already
          drawer(false, true);
        } else drawer(false, false);
        return;
      case "rename":
        if (s) rename(s);
        return;
      case "delete":
        if (s) askDelete(s, el);
        return;
    }
  });

  more.addEventListener("click", () => {
    if (more.getAttribute("aria-disabled") === "true" || loading) return;
    const before = items.length;
    void load(failure ? "first" : "more").then(() => {
      // Load more went away with the last page: the focus goes to the first new conversation.
      if (more.hidden && document.activeElement === document.body) list.querySelectorAll<HTMLElement>('[data-act="open"]')[before]?.focus();
    });
  });

  newChat.addEventListener("click", () => o.newChat());

  // ---- Search --------------------------------------------------------------

  let timer: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    const q = search.value.trim();
    if (q === query) return;
    const go = (): void => {
      query = q;
      void load("first");
    };
    // Clearing the box brings the whole list back at once; words wait
    // until the typing pauses.
    if (q === "") go();
    else timer = setTimeout(go, DEBOUNCE_MS);
  });
  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || search.value === "") return;
    ev.preventDefault();
    ev.stopPropagation(); // clears the search; a second Escape closes the drawer
    search.value = "";
    search.dispatchEvent(new Event("input"));
  });

  // ---- Rename --------------------------------------------------------------

  let closeEditor: (() => void) | undefined;

  function rename(s: SessionListItem): void {
    closeEditor?.();
    const li = list.querySelector<HTMLElement>(`li[data-id="${CSS.escape(s.sessionId)}"]`);
    if (!li) return;
    editing = s.sessionId;
    const input = document.createElement("input");
    input.className = "rename";
    input.value = s.title ?? "";
    input.setAttribute("aria-label", `New title for “${name(s)}”`);
    input.setAttribute("enterkeyhint", "done");
    const why = document.createElement("p");
    why.className = "rename-error";
    why.id = `rename-why-${s.sessionId}`;
    why.setAttribute("role", "alert");
    input.setAttribute("aria-describedby", why.id);
    const kept = [...li.children] as HTMLElement[];
    for (const c of kept) c.hidden = true;
    li.classList.add("editing");
    li.append(input, why);
    input.focus();
    input.select();
    let saving = false;
    const close = (focus: boolean): void => {
      closeEditor = undefined;
      editing = undefined;
      input.remove();
      why.remove();
      li.classList.remove("editing");
      for (const c of kept) c.hidden = false;
      if (stale) render();
      if (focus) focusIn(s.sessionId, "rename");
    };
    closeEditor = () => close(false);
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") {
        ev.preventDefault();
        ev.stopPropagation(); // the drawer stays open
        close(true);
        return;
      }
      if (ev.key !== "Enter" || ev.isComposing) return;
      ev.preventDefault();
      if (saving) return;
      saving = true;
      input.setAttribute("aria-busy", "true");
      void o.client
        .renameSession(s.sessionId, input.value)
        .then((got) => {
          // The answer is the session as listed; a rename keeps its place.
          items = items.map((x) => (x.sessionId === s.sessionId ? { ...x, title: got.title } : x));
          stale = true;
          close(true);
          o.announce(`Renamed to ${name(got)}.`);
        })
        .catch((e: unknown) => {
          // A refused title (400) is said with the server's own message.
          why.textContent =
            e instanceof HTTPError && e.status === 400
              ? `${e.message} A title has 1 to 120 characters, none of them control or invisible ones.`
              : o.plain(e);
          input.setAttribute("aria-invalid", "true");
        })
        .finally(() => {
          saving = false;
          input.removeAttribute("aria-busy");
        });
    });
  }

  // ---- Delete, after a confirmation ------------------------------------------

  let target: SessionListItem | undefined;
  let opener: HTMLElement | undefined;
  let deleting = false;

  function askDelete(s: SessionListItem, from: HTMLElement): void {
    closeEditor?.();
    target = s;
    opener = from;
    confirmText.textContent = `“${name(s)}” and all of its messages will be deleted. This can't be undone.`;
    confirmError.hidden = true;
    dialog.showModal();
    $("confirm-cancel").focus(); // the safe choice first
  }

  $("confirm-cancel").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    if (opener?.isConnected) opener.focus();
    opener = undefined;
  });
  confirmDelete.addEventListener("click", () => {
    const s = target;
    if (!s || deleting) return;
    deleting = true;
    confirmDelete.textContent = "Deleting…";
    confirmDelete.setAttribute("aria-disabled", "true");
    confirmError.hidden = true;
    void o.client
      .deleteSession(s.sessionId)
      .then(() => {
        deleted.add(s.sessionId);
        opener = undefined;
        dialog.close();
        o.announce(`Deleted “${name(s)}”.`);
        if (s.sessionId === o.current) {
          o.newChat(); // what was open is gone
          return;
        }
        const at = items.findIndex((x) => x.sessionId === s.sessionId);
        items = items.filter((x) => x.sessionId !== s.sessionId);
        render();
        const links = list.querySelectorAll<HTMLElement>('[data-act="open"]');
        (links[Math.min(at, links.length - 1)] ?? newChat).focus();
      })
      .catch((e: unknown) => {
        confirmError.textContent =
          e instanceof TurnstreamError && e.code === "SESSION_BUSY"
            ? "An answer is being written in this conversation. Delete it once the answer has ended."
            : o.plain(e);
        confirmError.hidden = false;
      })
      .finally(() => {
        deleting = false;
        confirmDelete.textContent = "Delete";
        confirmDelete.removeAttribute("aria-disabled");
      });
  });

  // ---- The drawer (phone width) ---------------------------------------------

  const phone = matchMedia("(max-width: 640px)");
  let open = false;

  function drawer(on: boolean, focusMenu: boolean): void {
    if (on === open) return;
    open = on;
    document.body.dataset.drawer = on ? "open" : "closed";
    menu.setAttribute("aria-expanded", String(on));
    scrim.hidden = !on;
    // The page behind the open drawer takes no focus and no clicks.
    chat.inert = on && phone.matches;
    if (on) (list.querySelector<HTMLElement>('[aria-current="page"]') ?? newChat).focus();
    else if (focusMenu) menu.focus();
  }

  menu.addEventListener("click", () => drawer(!open, false));
  $("close-sidebar").addEventListener("click", () => drawer(false, true));
  scrim.addEventListener("click", () => drawer(false, true));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && open && !dialog.open) drawer(false, true);
  });
  phone.addEventListener("change", () => {
    if (!phone.matches) drawer(false, false);
  });

  // The list is an index DynamoDB updates shortly after the write
  // (docs/conversations.md, Freshness): a read right after a turn may miss
  // it, so a refresh reads once more a little later.
  let again: ReturnType<typeof setTimeout> | undefined;
  void load("first");
  return {
    refresh: () => {
      clearTimeout(again);
      again = setTimeout(() => void load("refresh"), LAG_MS);
      return load("refresh");
    },
  };
}
