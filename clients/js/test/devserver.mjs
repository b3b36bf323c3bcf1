// Test helpers: build cmd/devserver once per process and start it on a
// free loopback port with a given environment.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "../../..");

let binary;
let turnctl;

/** turnctlBinary builds ./cmd/turnctl into a temporary directory (once). */
export function turnctlBinary() {
  if (!turnctl) {
    const dir = mkdtempSync(join(tmpdir(), "turnstream-turnctl-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    turnctl = join(dir, "turnctl");
    execFileSync(process.env.GO ?? "go", ["build", "-o", turnctl, "./cmd/turnctl"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  }
  return turnctl;
}

/** devserverBinary builds ./cmd/devserver into a temporary directory (once). */
export function devserverBinary() {
  if (!binary) {
    const dir = mkdtempSync(join(tmpdir(), "turnstream-devserver-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    binary = join(dir, "devserver");
    execFileSync(process.env.GO ?? "go", ["build", "-o", binary, "./cmd/devserver"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  }
  return binary;
}

/**
 * startDevServer runs the dev server on 127.0.0.1:0 with env added to the
 * environment and args added to its flags, and resolves to {base,
 * turnURL, historyURL, artifactsURL, issuer, stop} once it printed its
 * URLs (issuer: the local sign-in issuer's URL with -signin local).
 */
export function startDevServer(env = {}, args = []) {
  const bin = devserverBinary();
  const signin = args.includes("-signin");
  const child = spawn(bin, ["-addr", "127.0.0.1:0", ...args], {
    env: { ...process.env, AUTH_MODE: "dev", MODEL_PROVIDER: "echo", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    const onData = (b) => {
      out += b.toString();
      const m = /turn:\s+(http:\/\/127\.0\.0\.1:\d+)\/turn\//.exec(out);
      const idp = /sign-in:\s+(http:\/\/127\.0\.0\.1:\d+) /.exec(out);
      if (!m || (signin && !idp)) return;
      child.stdout.off("data", onData);
      child.stdout.resume(); // keep draining the request log
      const base = m[1];
      resolve({
        base,
        turnURL: `${base}/turn/`,
        historyURL: `${base}/history/`,
        artifactsURL: `${base}/artifacts/`,
        issuer: idp?.[1],
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once("exit", () => done());
            child.kill("SIGTERM");
          }),
      });
    };
    child.stdout.on("data", onData);
    child.once("exit", (code) => reject(new Error(`devserver exited (${code}) before printing its URLs:\n${out}`)));
    child.once("error", reject);
  });
}
