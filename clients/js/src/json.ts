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

/**
 * parseStrict reads one JSON text (surrounding JSON whitespace allowed).
 * It keeps its own stack instead of recursing, so deep input cannot
 * exhaust the JavaScript stack before MAX_PARSE_DEPTH.
 */
export function parseStrict(text: string): JSONValue | typeof NOT_JSON {
  const p = new Parser(text);
  try {
    p.space();
    const v = p.root();
    p.space();
    if (p.pos !== text.length) return NOT_JSON;
    return v;
  } catch (e) {
    if (e === fault) return NOT_JSON;
    throw e;
  }
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// A run of string characters that need no attention.
const PLAIN = /[^"\\\u0000-\u001f\ud800-\udfff]*/y;

// define adds key as an own data property, as JSON.parse does: for
// "__proto__" a plain assignment would set the prototype instead.
function define(obj: { [key: string]: JSONValue }, key: string, v: JSONValue): void {
  Object.defineProperty(obj, key, { value: v, writable: true, enumerable: true, configurable: true });
}

// A container being read: its value and, for an object, the key whose
// value comes next.
interface Frame {
  obj?: { [key: string]: JSONValue };
  arr?: JSONValue[];
  key: string;
}

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

  root(): JSONValue {
    const stack: Frame[] = [];
    for (;;) {
      // Read a value; an opened, non-empty container continues the loop.
      let v: JSONValue;
      const c = this.s.charCodeAt(this.pos);
      if (c === 0x7b || c === 0x5b) {
        if (stack.length >= MAX_PARSE_DEPTH) throw fault;
        this.pos++;
        this.space();
        if (c === 0x7b) {
          const obj: { [key: string]: JSONValue } = {};
          if (this.s.charCodeAt(this.pos) === 0x7d) {
            this.pos++;
            v = obj;
          } else {
            stack.push({ obj, key: this.key(obj) });
            continue;
          }
        } else {
          const arr: JSONValue[] = [];
          if (this.s.charCodeAt(this.pos) === 0x5d) {
            this.pos++;
            v = arr;
          } else {
            stack.push({ arr, key: "" });
            continue;
          }
        }
      } else {
        v = this.scalar(c);
      }
      // Store it and close every container that ends here.
      for (;;) {
        const top = stack[stack.length - 1];
        if (top === undefined) return v;
        if (top.arr) top.arr.push(v);
        else if (top.key === "__proto__") define(top.obj!, top.key, v);
        else top.obj![top.key] = v;
        this.space();
        const d = this.s.charCodeAt(this.pos++);
        if (d === 0x2c) {
          this.space();
          if (top.obj) top.key = this.key(top.obj);
          break;
        }
        if (d !== (top.obj ? 0x7d : 0x5d)) throw fault;
        stack.pop();
        v = top.obj ?? top.arr!;
      }
    }
  }

  // key reads an object member's name and its colon; a duplicated name is a fault.
  key(obj: { [key: string]: JSONValue }): string {
    if (this.s.charCodeAt(this.pos) !== 0x22) throw fault;
    const k = this.string();
    if (Object.prototype.hasOwnProperty.call(obj, k)) throw fault;
    this.space();
    if (this.s.charCodeAt(this.pos) !== 0x3a) throw fault;
    this.pos++;
    this.space();
    return k;
  }

  scalar(c: number): JSONValue {
    switch (c) {
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

  // string reads a string from its opening quote. Raw characters must be
  // well-formed UTF-16 and not controls; \u escapes must pair surrogates.
  string(): string {
    const s = this.s;
    let i = ++this.pos;
    let out = "";
    let run = i;
    for (;;) {
      PLAIN.lastIndex = i;
      PLAIN.test(s);
      i = PLAIN.lastIndex;
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
