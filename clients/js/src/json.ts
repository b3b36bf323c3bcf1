// A strict JSON reader: exactly what JSON.parse accepts, minus the inputs
// two parsers could read two ways. A duplicated object key at any depth, a
// lone UTF-16 surrogate (escaped or raw) and nesting deeper than
// MAX_PARSE_DEPTH are syntax errors. It never throws: parseStrict returns
// NOT_JSON instead, and callers map that to their own fixed diagnostic.
//
// Objects are ordinary objects whose keys are defined as own data
// properties (as JSON.parse does), so a "__proto__" key is a plain key and
// never a prototype.

/** Nesting bound of the reader; far above every depth the protocol allows. */
export const MAX_PARSE_DEPTH = 10_000;

/** The value parseStrict returns for text that is not strict JSON. */
export const NOT_JSON: unique symbol = Symbol("not JSON");

/** A parsed JSON value. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

class SyntaxFault {}
const fault = new SyntaxFault();

/** parseStrict reads one JSON text (surrounding JSON whitespace allowed). */
export function parseStrict(text: string): JSONValue | typeof NOT_JSON {
  const p = new Parser(text);
  try {
    p.space();
    const v = p.value(0);
    p.space();
    if (p.pos !== text.length) return NOT_JSON;
    return v;
  } catch (e) {
    if (e === fault || e instanceof RangeError) return NOT_JSON; // RangeError: a stack overflow on a tiny stack
    throw e;
  }
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

class Parser {
  pos = 0;
  constructor(readonly s: string) {}

  space(): void {
    const s = this.s;
    while (this.pos < s.length) {
      const c = s.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.pos++;
    }
  }

  value(depth: number): JSONValue {
    const c = this.s.charCodeAt(this.pos);
    switch (c) {
      case 0x7b: return this.object(depth);
      case 0x5b: return this.array(depth);
      case 0x22: return this.string();
      case 0x74: return this.literal("true", true);
      case 0x66: return this.literal("false", false);
      case 0x6e: return this.literal("null", null);
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = this.pos;
      const m = NUMBER.exec(this.s);
      if (!m) throw fault;
      this.pos += m[0].length;
      return Number(m[0]); // JSON.parse's value: the nearest double, ±Infinity on overflow
    }
    throw fault;
  }

  literal<T extends JSONValue>(lit: string, v: T): T {
    if (!this.s.startsWith(lit, this.pos)) throw fault;
    this.pos += lit.length;
    return v;
  }

  object(depth: number): JSONValue {
    if (depth >= MAX_PARSE_DEPTH) throw fault;
    this.pos++;
    const out: { [key: string]: JSONValue } = {};
    this.space();
    if (this.s.charCodeAt(this.pos) === 0x7d) {
      this.pos++;
      return out;
    }
    for (;;) {
      if (this.s.charCodeAt(this.pos) !== 0x22) throw fault;
      const key = this.string();
      if (Object.prototype.hasOwnProperty.call(out, key)) throw fault; // a duplicated key
      this.space();
      if (this.s.charCodeAt(this.pos) !== 0x3a) throw fault;
      this.pos++;
      this.space();
      const v = this.value(depth + 1);
      Object.defineProperty(out, key, { value: v, writable: true, enumerable: true, configurable: true });
      this.space();
      const c = this.s.charCodeAt(this.pos++);
      if (c === 0x7d) return out;
      if (c !== 0x2c) throw fault;
      this.space();
    }
  }

  array(depth: number): JSONValue {
    if (depth >= MAX_PARSE_DEPTH) throw fault;
    this.pos++;
    const out: JSONValue[] = [];
    this.space();
    if (this.s.charCodeAt(this.pos) === 0x5d) {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth + 1));
      this.space();
      const c = this.s.charCodeAt(this.pos++);
      if (c === 0x5d) return out;
      if (c !== 0x2c) throw fault;
      this.space();
    }
  }

  // string reads a string from its opening quote. Raw characters must be
  // well-formed UTF-16 and not controls; \u escapes must pair surrogates.
  string(): string {
    const s = this.s;
    let i = ++this.pos;
    let out = "";
    let run = i;
    for (;;) {
      if (i >= s.length) throw fault;
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        out += s.slice(run, i);
        this.pos = i + 1;
        return out;
      }
      if (c < 0x20) throw fault;
      if (c >= 0xd800 && c <= 0xdfff) {
        const lo = s.charCodeAt(i + 1);
        if (c >= 0xdc00 || !(lo >= 0xdc00 && lo <= 0xdfff)) throw fault;
        i += 2;
        continue;
      }
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += s.slice(run, i);
      const e = s.charCodeAt(i + 1);
      i += 2;
      switch (e) {
        case 0x22: out += '"'; break;
        case 0x5c: out += "\\"; break;
        case 0x2f: out += "/"; break;
        case 0x62: out += "\b"; break;
        case 0x66: out += "\f"; break;
        case 0x6e: out += "\n"; break;
        case 0x72: out += "\r"; break;
        case 0x74: out += "\t"; break;
        case 0x75: {
          const u = hex4(s, i);
          i += 4;
          if (u >= 0xd800 && u <= 0xdfff) {
            // Only a high surrogate escape followed by a low one is a character.
            if (u >= 0xdc00 || s.charCodeAt(i) !== 0x5c || s.charCodeAt(i + 1) !== 0x75) throw fault;
            const lo = hex4(s, i + 2);
            if (lo < 0xdc00 || lo > 0xdfff) throw fault;
            i += 6;
            out += String.fromCharCode(u, lo);
          } else {
            out += String.fromCharCode(u);
          }
          break;
        }
        default:
          throw fault;
      }
      run = i;
    }
  }
}

function hex4(s: string, at: number): number {
  if (at + 4 > s.length) throw fault;
  let v = 0;
  for (let k = at; k < at + 4; k++) {
    const c = s.charCodeAt(k);
    let d: number;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
    else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
    else throw fault;
    v = (v << 4) | d;
  }
  return v;
}
