// What the e2e tests share: a program started for the test, read until it says it is ready,
// and headless Chromium (Debian's, or CHROMIUM) driven by the pinned playwright-core.
import { spawn } from "node:child_process";
import { chromium } from "playwright-core";

/// Debian's Chromium (or CHROMIUM), headless, with nothing of its own on the network.
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--no-first-run"],
  });
}

/// Spawns `command` and resolves with the first match of `pattern` in its output. It runs
/// through `setpriv --pdeathsig KILL` (util-linux; same pid, it execs the program), so it dies
/// with this test process even when the test is killed before its `finally`.
export function started(command, args, env, pattern) {
  const child = spawn("setpriv", ["--pdeathsig", "KILL", "--", command, ...args],
    { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const found = new Promise((resolve, reject) => {
    const look = (chunk) => {
      output += chunk.toString();
      const match = output.match(pattern);
      if (match) resolve(match[1] ?? match[0]);
    };
    child.stdout.on("data", look);
    child.stderr.on("data", look);
    child.on("exit", (code) => reject(new Error(`${command} exited (${code}) before ready:\n${output}`)));
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, found, exited, output: () => output };
}
