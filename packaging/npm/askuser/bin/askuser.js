#!/usr/bin/env node
// askuser's npm launcher: runs the askuser binary from the package for this platform
// (`@askuser/linux-x64`, …, an optional dependency that npm installs only where its `os`
// and `cpu` fit, as esbuild and Biome ship theirs). Plain Node, no dependencies.
//
// The binary gets the arguments, the environment and this process's standard input,
// output and error as they are (`askuser mcp` speaks MCP over them), SIGINT, SIGTERM and
// SIGHUP sent to the launcher are passed on to it, and the launcher ends as it ended:
// with its exit code, or by the same signal.
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");

const platform = `${process.platform}-${process.arch}`;
const pkg = `@askuser/${platform}`;
const exe = process.platform === "win32" ? "askuser.exe" : "askuser";

function fail(message) {
  process.stderr.write(`askuser: ${message}\n`);
  process.exit(1);
}

/** The platforms this version of the package has a binary for. */
function platforms() {
  try {
    const own = require("../package.json");
    return Object.keys(own.optionalDependencies || {}).map((name) => name.replace("@askuser/", ""));
  } catch {
    return [];
  }
}

function binary() {
  if (process.env.ASKUSER_BINARY_PATH) return process.env.ASKUSER_BINARY_PATH;
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    const known = platforms();
    const fits = known.includes(platform);
    fail(
      `no askuser binary for this platform (${platform}): the package ${pkg} is not installed.\n` +
        (fits
          ? `askuser: npm leaves it out when told to omit optional dependencies (--omit=optional, --no-optional), or when it could not fetch it: install askuser again, without that and with the registry reachable.\n`
          : `askuser: this askuser package has binaries for ${known.length ? known.join(", ") : "no platform"} only.\n`) +
        `askuser: other ways to install the same binary: \`pip install askuser-mcp\` (or \`uvx --from askuser-mcp askuser\`), \`cargo install askuser\`.`
    );
  }
  return path.join(dir, "bin", exe);
}

const bin = binary();
if (process.platform !== "win32") {
  // npm keeps the file's mode in its tarball, but a copy made some other way may lose it.
  try {
    fs.accessSync(bin, fs.constants.X_OK);
  } catch {
    try {
      fs.chmodSync(bin, 0o755);
    } catch {}
  }
}

const child = spawn(bin, process.argv.slice(2), { stdio: "inherit", windowsHide: true });

const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const handlers = {};
for (const signal of forwarded) {
  handlers[signal] = () => {
    // The binary may have ended already: nothing left to tell.
    try {
      child.kill(signal);
    } catch {}
  };
  process.on(signal, handlers[signal]);
}

child.on("error", (err) => {
  const why = err.code === "ENOENT" ? "it does not exist, or this system cannot run it (a binary built for glibc on a musl system?)" : err.message;
  fail(`cannot run ${bin}: ${why}`);
});

child.on("exit", (code, signal) => {
  for (const s of forwarded) process.removeListener(s, handlers[s]);
  if (signal) {
    // End by the same signal, so whoever started the launcher sees what happened.
    process.kill(process.pid, signal);
    // A signal that does not end Node (none of the forwarded ones, once unhandled) falls back to 1.
    setTimeout(() => process.exit(1), 1000).unref();
    return;
  }
  process.exit(code === null ? 1 : code);
});
