// What the e2e tests share: a program started for the test, read until it says it is ready.
import { spawn } from "node:child_process";

/// Spawns `command` and resolves with the first match of `pattern` in its output.
export function started(command, args, env, pattern) {
  const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
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
