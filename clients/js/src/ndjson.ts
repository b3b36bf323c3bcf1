/**
 * LineSplitter cuts a byte stream into NDJSON lines at LF bytes. It works
 * on bytes, not text, so a line never ends inside a multi-byte UTF-8
 * character however the network chunks the stream; each line is decoded
 * as a whole, later. A CR before the LF stays in the line (JSON
 * whitespace to the decoder).
 */
export class LineSplitter {
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;

  /** push adds a chunk and returns the lines it completed, without their LF. */
  push(chunk: Uint8Array): Uint8Array[] {
    const lines: Uint8Array[] = [];
    let start = 0;
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, start)) {
      lines.push(this.#take(chunk.subarray(start, i)));
      start = i + 1;
    }
    if (start < chunk.length) {
      this.#pending.push(chunk.slice(start));
      this.#pendingBytes += chunk.length - start;
    }
    return lines;
  }

  /** Bytes received after the last LF. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** peek returns the unterminated tail (empty when none) without taking it. */
  peek(): Uint8Array {
    if (this.#pending.length === 0) return new Uint8Array(0);
    if (this.#pending.length > 1) this.#pending = [this.#take(new Uint8Array(0)).slice()];
    this.#pendingBytes = this.#pending[0]!.length;
    return this.#pending[0]!;
  }

  /** flush returns the unterminated tail (empty when none) and resets. */
  flush(): Uint8Array {
    return this.#take(new Uint8Array(0));
  }

  #take(tail: Uint8Array): Uint8Array {
    if (this.#pending.length === 0) return tail.slice();
    const out = new Uint8Array(this.#pendingBytes + tail.length);
    let at = 0;
    for (const p of this.#pending) {
      out.set(p, at);
      at += p.length;
    }
    out.set(tail, at);
    this.#pending = [];
    this.#pendingBytes = 0;
    return out;
  }
}
